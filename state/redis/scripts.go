package steadyredis

import "github.com/redis/go-redis/v9"

// The scripts trust nothing they read: a key of another type is deleted, and a field that is
// missing, not a number, not finite, negative or further in the future than the horizon is
// taken as absent. Every write rewrites every field, so a write repairs the key it meets. The
// arguments come from this package and are checked all the same.

// advise merges advice into a pipeline's hash as resilience.Advice.Merge does: the longer
// pause, the later closing, the longer opening unless a later closing ends it. ARGV: opened,
// open until, closed, cool until (ms since the epoch, 0 for none), the writer's now (ms) and
// the horizon (ms, resilience.SharedHorizon). It returns the merged hash, as the four times.
// The key expires a minute after the last of them, as a pipeline still adopts an opening for
// a minute after its end (awaiting the probe).
var advise = redis.NewScript(`
local now, horizon = tonumber(ARGV[5]) or 0, tonumber(ARGV[6]) or 0
local function time(v)
  local n = tonumber(v)
  if not n or n ~= n or n <= 0 or n > now + horizon then return 0 end
  return math.floor(n)
end
local t = redis.call('TYPE', KEYS[1])
if t.ok ~= 'hash' and t.ok ~= 'none' then redis.call('DEL', KEYS[1]) end
local h = redis.call('HMGET', KEYS[1], 'opened', 'open_until', 'closed', 'cool_until')
local opened, untl, closed, cool = time(h[1]), time(h[2]), time(h[3]), time(h[4])
if untl == 0 then opened = 0 end
local a_opened, a_until, a_closed, a_cool = time(ARGV[1]), time(ARGV[2]), time(ARGV[3]), time(ARGV[4])
if a_cool > cool then cool = a_cool end
if a_closed > closed then closed = a_closed end
if a_until > untl then opened, untl = a_opened, a_until end
if untl > 0 and opened < closed then opened, untl = 0, 0 end
redis.call('HSET', KEYS[1], 'opened', opened, 'open_until', untl, 'closed', closed, 'cool_until', cool)
local last = math.max(untl, cool, closed, now) + 60000
redis.call('PEXPIREAT', KEYS[1], last + 1000)
return {opened, untl, closed, cool}
`)

// claim gives the probe to ARGV[1] for ARGV[2] ms unless another holds it: -1 when it is
// ARGV[1]'s, else the milliseconds the holder keeps it. A holder without an expiry, or one
// that would keep the probe longer than ARGV[3] ms (resilience.SharedHorizon), is garbage and
// loses it. Another holder's own hold, longer than the claimer's (instances with different
// TimeoutSeconds, as in a rolling deploy), is respected: two probes never go out at once.
var claim = redis.NewScript(`
local hold, horizon = tonumber(ARGV[2]) or 1000, tonumber(ARGV[3]) or 86400000
local t = redis.call('TYPE', KEYS[1])
if t.ok ~= 'string' and t.ok ~= 'none' then redis.call('DEL', KEYS[1]) end
local cur = redis.call('GET', KEYS[1])
local left = redis.call('PTTL', KEYS[1])
if not cur or cur == ARGV[1] or left < 0 or left > horizon then
  redis.call('SET', KEYS[1], ARGV[1], 'PX', hold)
  return -1
end
return left
`)

// release deletes the probe if ARGV[1] holds it.
var release = redis.NewScript(`
if redis.call('TYPE', KEYS[1]).ok == 'string' and redis.call('GET', KEYS[1]) == ARGV[1] then
  return redis.call('DEL', KEYS[1])
end
return 0
`)

// take is a token bucket: ARGV[1] units a minute, refilled evenly, full at first; ARGV[2] is
// now (ms), ARGV[3] the units wanted, ARGV[4] the clock skew allowed (ms). It takes what it
// holds up to ARGV[3] and returns {taken, ms until the rest is there}. A clock behind the
// bucket's last time refills nothing; a last time further ahead than the skew is taken as now
// (it would otherwise starve the budget); a bucket that is not a finite number of 0 or more
// (or is absurdly large) is taken as empty, refilling from now; one above the limit (another
// instance learnt a lower limit) is cut to the limit, not emptied, so instances that learnt
// different limits do not empty each other's budget.
var take = redis.NewScript(`
local limit, now, want, skew = tonumber(ARGV[1]) or 1, tonumber(ARGV[2]) or 0, tonumber(ARGV[3]) or 1, tonumber(ARGV[4]) or 0
if limit < 1 then limit = 1 end
local rate = limit / 60000
local t = redis.call('TYPE', KEYS[1])
if t.ok ~= 'hash' and t.ok ~= 'none' then redis.call('DEL', KEYS[1]) end
local h = redis.call('HMGET', KEYS[1], 'tokens', 'at')
local tokens, at = tonumber(h[1]), tonumber(h[2])
if not h[1] and not h[2] then
  tokens, at = limit, now
else
  if not at or at ~= at or at > now + skew then at = now end
  if not tokens or tokens ~= tokens or tokens < 0 or tokens > 2 ^ 53 then tokens, at = 0, now end
  if tokens > limit then tokens = limit end -- a limit learnt lower by another instance
end
if now > at then tokens, at = math.min(limit, tokens + (now - at) * rate), now end
local got = math.min(want, math.floor(tokens))
if got < 0 then got = 0 end
tokens = tokens - got
redis.call('HSET', KEYS[1], 'tokens', tostring(tokens), 'at', tostring(at))
redis.call('PEXPIRE', KEYS[1], 120000)
local wait = 0
if got < want then wait = math.ceil((want - got - tokens) / rate) end
return {got, wait}
`)
