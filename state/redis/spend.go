package steadyredis

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/steadyllm/steady/cost"
	"github.com/steadyllm/steady/providers"
)

// The Store keeps the spend of steady's budgets for the fleet (cost.SpendStore): per budget,
// key and window, what it granted the instances and what they said they spent, in whole
// micro-units (cost.Micro), under "<Prefix>spend:<budget>:<window start, ms>:<key>" until an
// hour after the window ends. An instance leases slices of the room and spends them locally
// (see cost.SpendStore), so a call meets Redis only when its instance's slice runs dry; each
// request brings the totals its instance last heard, from which a damaged or lost window is
// rebuilt.

var _ cost.SpendStore = (*Store)(nil)

// spendHorizon bounds how long a window's key lives: the longest window (a month) and an hour.
const spendHorizon = 32*24*time.Hour + time.Hour

// lease adds ARGV[3] micro-units to the window's spend and grants up to ARGV[2] of what is
// left below ARGV[1]; ARGV[4] is when the key expires (ms), ARGV[5] the writer's now (ms),
// ARGV[6] the horizon (ms), ARGV[7] and ARGV[8] the floors of granted and spent — the totals
// the writer last heard. It returns {granted now, granted in all, spent in all}.
//
// Both totals are kept at or above the floors, which changes nothing while the key is sound
// (its totals are never below what a writer heard). A field that is missing, not a whole
// number, negative, or beyond its bound — the ceiling for granted, 2^53 for spent — is
// garbage, and so is a key of another type (deleted): a total read as garbage, and a key that
// is gone (evicted, flushed), is rebuilt from the floors, never above what was true, so the
// damage refuses no call. Floors are cut to the same bounds. An expiry in the past or beyond
// the horizon is taken as the horizon from now.
var lease = redis.NewScript(`
local limit = 9007199254740992
local function whole(v, top)
  local n = tonumber(v)
  if not n or n ~= n or n < 0 or n > top or n ~= math.floor(n) then return nil end
  return n
end
local ceiling = whole(ARGV[1], limit) or 0
local want, spent = whole(ARGV[2], limit) or 0, whole(ARGV[3], limit) or 0
local now, horizon = whole(ARGV[5], limit) or 0, whole(ARGV[6], limit) or 0
local floor_granted = math.min(whole(ARGV[7], limit) or 0, ceiling)
local floor_spent = whole(ARGV[8], limit) or 0
local granted, total
local t = redis.call('TYPE', KEYS[1]).ok
if t == 'hash' then
  local h = redis.call('HMGET', KEYS[1], 'granted', 'spent')
  granted, total = whole(h[1], ceiling), whole(h[2], limit)
elseif t ~= 'none' then
  redis.call('DEL', KEYS[1])
end
granted = math.max(granted or 0, floor_granted)
total = math.max(total or 0, floor_spent)
local got = math.min(want, ceiling - granted)
granted = granted + got
total = math.min(total + spent, limit)
redis.call('HSET', KEYS[1], 'granted', string.format('%.0f', granted), 'spent', string.format('%.0f', total))
local expire = whole(ARGV[4], limit)
if not expire or expire <= now or expire > now + horizon then expire = now + horizon end
redis.call('PEXPIREAT', KEYS[1], string.format('%.0f', expire))
return {got, granted, total}
`)

// LeaseSpend adds r.Spent to the spend of r's window and grants up to r.Want more of its room
// below r.Ceiling, keeping the totals at or above r's floors (see cost.SpendStore). Amounts go
// to Redis in whole micro-units: the ceiling and the floors rounded down, want and spent up;
// the grant comes back never above want nor below 0, and the totals within
// [0, cost.MaxStoredMoney], whatever Redis answers.
func (s *Store) LeaseSpend(ctx context.Context, r cost.SpendRequest) (cost.SpendLease, error) {
	switch {
	case r.Budget == "" || len(r.Budget) > 64 || len(r.Key) > cost.MaxKeyBytes:
		return cost.SpendLease{}, fmt.Errorf("steadyredis: budget %q or its key is not one a ledger gives", r.Budget)
	case !r.End.After(r.Start) || r.End.Sub(r.Start) > spendHorizon:
		return cost.SpendLease{}, errors.New("steadyredis: the window must end after it starts, within a month")
	}
	ctx, cancel := s.ctx(ctx)
	defer cancel()
	k := s.key("spend:", r.Budget+":"+strconv.FormatInt(r.Start.UnixMilli(), 10)+":"+r.Key)
	now := time.Now()
	ceil := microDown(r.Ceiling)
	v, err := lease.Run(ctx, s.rdb, []string{k}, ceil, cost.Micro(r.Want), cost.Micro(r.Spent),
		r.End.Add(time.Hour).UnixMilli(), now.UnixMilli(), spendHorizon.Milliseconds(),
		min(microDown(r.FloorGranted), ceil), microDown(r.FloorSpent)).Int64Slice()
	if err == nil && len(v) != 3 {
		err = fmt.Errorf("steadyredis: the spend script returned %d values", len(v))
	}
	s.noteOp(err)
	if err != nil {
		return cost.SpendLease{}, err
	}
	return cost.SpendLease{Granted: min(cost.FromMicro(v[0]), max(r.Want, 0)), FleetGranted: cost.FromMicro(v[1]),
		FleetSpent: cost.FromMicro(v[2])}, nil
}

// microDown converts an amount to whole micro-units within [0, cost.MaxStoredMoney], rounding
// down: a bound never grows in the conversion.
func microDown(m providers.Money) int64 {
	return int64(min(max(m, 0), cost.MaxStoredMoney) / 1000)
}
