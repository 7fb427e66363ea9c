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
// (see cost.SpendStore), so a call meets Redis only when its instance's slice runs dry.

var _ cost.SpendStore = (*Store)(nil)

// spendHorizon bounds how long a window's key lives: the longest window (a month) and an hour.
const spendHorizon = 32*24*time.Hour + time.Hour

// lease adds ARGV[3] micro-units to the window's spend and grants up to ARGV[2] of what is
// left below ARGV[1]; ARGV[4] is when the key expires (ms), ARGV[5] the writer's now (ms),
// ARGV[6] the horizon (ms). It returns {granted now, granted in all, spent in all}. A key of
// another type, and a field that is missing from an existing key, not a whole number, negative
// or beyond 2^53, is garbage: what was granted is taken as the ceiling (no room left in the
// window: the safe side for money) and what was spent as what was granted; the write repairs
// the key. An expiry in the past or beyond the horizon is taken as the horizon from now.
var lease = redis.NewScript(`
local limit = 9007199254740992
local function whole(v)
  local n = tonumber(v)
  if not n or n ~= n or n < 0 or n > limit or n ~= math.floor(n) then return nil end
  return n
end
local ceiling, want, spent = whole(ARGV[1]) or 0, whole(ARGV[2]) or 0, whole(ARGV[3]) or 0
local now, horizon = whole(ARGV[5]) or 0, whole(ARGV[6]) or 0
local granted, total = 0, 0
local t = redis.call('TYPE', KEYS[1]).ok
if t == 'hash' then
  local h = redis.call('HMGET', KEYS[1], 'granted', 'spent')
  granted, total = whole(h[1]), whole(h[2])
  if granted == nil then granted = ceiling end
  if total == nil then total = granted end
elseif t ~= 'none' then
  redis.call('DEL', KEYS[1])
  granted, total = ceiling, ceiling
end
local room = ceiling - granted
if room < 0 then room = 0 end
local got = math.min(want, room)
granted = granted + got
total = math.min(total + spent, limit)
redis.call('HSET', KEYS[1], 'granted', string.format('%.0f', granted), 'spent', string.format('%.0f', total))
local expire = whole(ARGV[4])
if not expire or expire <= now or expire > now + horizon then expire = now + horizon end
redis.call('PEXPIREAT', KEYS[1], string.format('%.0f', expire))
return {got, granted, total}
`)

// LeaseSpend adds spent to the spend of budget's key in the window [start, end) and grants up
// to want more of its room below ceiling (see cost.SpendStore). Amounts go to Redis in whole
// micro-units: ceiling rounded down, want and spent up; the grant comes back never above want
// nor below 0, and the totals within [0, cost.MaxStoredMoney], whatever Redis answers.
func (s *Store) LeaseSpend(ctx context.Context, budget, key string, start, end time.Time, ceiling, want, spent providers.Money) (cost.SpendLease, error) {
	switch {
	case budget == "" || len(budget) > 64 || len(key) > cost.MaxKeyBytes:
		return cost.SpendLease{}, fmt.Errorf("steadyredis: budget %q or its key is not one a ledger gives", budget)
	case !end.After(start) || end.Sub(start) > spendHorizon:
		return cost.SpendLease{}, errors.New("steadyredis: the window must end after it starts, within a month")
	}
	ctx, cancel := s.ctx(ctx)
	defer cancel()
	k := s.key("spend:", budget+":"+strconv.FormatInt(start.UnixMilli(), 10)+":"+key)
	now := time.Now()
	ceil := int64(min(max(ceiling, 0), cost.MaxStoredMoney) / 1000)
	v, err := lease.Run(ctx, s.rdb, []string{k}, ceil, cost.Micro(want), cost.Micro(spent),
		end.Add(time.Hour).UnixMilli(), now.UnixMilli(), spendHorizon.Milliseconds()).Int64Slice()
	if err == nil && len(v) != 3 {
		err = fmt.Errorf("steadyredis: the spend script returned %d values", len(v))
	}
	s.noteOp(err)
	if err != nil {
		return cost.SpendLease{}, err
	}
	return cost.SpendLease{Granted: min(cost.FromMicro(v[0]), max(want, 0)), FleetGranted: cost.FromMicro(v[1]),
		FleetSpent: cost.FromMicro(v[2])}, nil
}
