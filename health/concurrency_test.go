package health

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/steadyllm/steady/resilience"
)

// switchSource changes state while being read, for the race detector.
type switchSource struct{ s atomic.Int32 }

func (s *switchSource) CircuitState() resilience.CircuitState {
	return resilience.CircuitState(s.s.Load())
}

func TestHandler_ConcurrentRequestsWhileStatesAndSourcesChange(t *testing.T) {
	c := NewChecker(WithFallback())
	srcs := make([]*switchSource, 4)
	for i := range srcs {
		srcs[i] = &switchSource{}
		c.Add("p"+string(rune('0'+i)), srcs[i])
	}
	h := c.Handler()
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 200 {
				srcs[(g+i)%len(srcs)].s.Store(int32(i % 4))
				switch i % 4 {
				case 0:
					c.Add("extra", stateSource(resilience.CircuitState(g%4)))
				case 1:
					_ = c.Check(context.Background())
				default:
					method := http.MethodGet
					if i%2 == 1 {
						method = http.MethodHead
					}
					rec := httptest.NewRecorder()
					h.ServeHTTP(rec, httptest.NewRequest(method, "/readyz", nil))
					if rec.Code != 200 && rec.Code != 503 {
						t.Errorf("code = %d", rec.Code)
					}
					if method == http.MethodGet && !strings.Contains(rec.Body.String(), `"p0:circuit"`) {
						t.Errorf("body misses p0: %s", rec.Body)
					}
				}
			}
		}()
	}
	wg.Wait()
}
