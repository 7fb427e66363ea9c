package steadyredis_test

import (
	"context"
	"strconv"
	"testing"
	"time"

	steadyredis "github.com/steadyllm/steady/state/redis"
)

// The probe election respects the holder's own hold, however much longer than the claimer's
// (instances with different TimeoutSeconds in a rolling deploy): two probes never go out at
// once. Only a hold beyond the horizon is garbage.
func TestRedis_AClaimRespectsALongerHoldersHold(t *testing.T) {
	a := steadyredis.New(steadyredis.Options{Addr: addr(), Prefix: t.Name()})
	defer a.Close()
	b := steadyredis.New(steadyredis.Options{Addr: addr(), Prefix: t.Name()})
	defer b.Close()
	ctx := context.Background()
	if mine, _, err := a.ClaimProbe(ctx, "openai", 120*time.Second); err != nil || !mine {
		t.Fatalf("a's claim: %v %v", mine, err)
	}
	if mine, _, err := b.ClaimProbe(ctx, "openai", 30*time.Second); err != nil || mine {
		t.Fatalf("b took a's probe (mine %v, %v)", mine, err)
	}
	rdb := direct(t)
	rdb.Set(ctx, t.Name()+"probe:openai", "someone", 30*24*time.Hour) // a hold no instance asks for
	if mine, _, err := b.ClaimProbe(ctx, "openai", 30*time.Second); err != nil || !mine {
		t.Fatalf("a month-long hold was respected: %v %v", mine, err)
	}
}

// A budget bucket above its limit (another instance learnt a lower limit) is cut to the
// limit, not emptied: instances that learnt different limits do not empty each other's budget.
func TestRedis_ABudgetAboveItsLimitIsCutNotEmptied(t *testing.T) {
	s := steadyredis.New(steadyredis.Options{Addr: addr(), Prefix: t.Name()})
	defer s.Close()
	ctx := context.Background()
	now := time.Now()
	direct(t).HSet(ctx, t.Name()+"budget:openai:requests", "tokens", "600", "at", strconv.FormatInt(now.UnixMilli(), 10))
	got, _, err := s.TakeBudget(ctx, "openai:requests", 60, 10, now)
	if err != nil || got != 10 {
		t.Fatalf("took %d of 10 from a bucket of 600 with a limit of 60: %v", got, err)
	}
}
