package health_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"time"

	"github.com/steadyllm/steady/health"
	"github.com/steadyllm/steady/resilience"
)

// newPipeline builds a pipeline with the default policy, named after its provider.
func newPipeline(name string) *resilience.Pipeline {
	p, err := resilience.New(resilience.DefaultOptions(), resilience.WithName(name))
	if err != nil {
		panic(err)
	}
	return p
}

// The checker's handler goes on the readiness endpoint; the liveness endpoint gets a
// handler that never looks at providers. Here Anthropic was taken out of service by hand,
// so readiness fails with 503 while liveness still passes.
func ExampleChecker_Handler() {
	openai, anthropic := newPipeline("openai"), newPipeline("anthropic")
	anthropic.Isolate()

	// WithNow only pins the "time" field so the output below is stable.
	checker := health.NewChecker(health.WithNow(func() time.Time {
		return time.Date(2025, 6, 1, 12, 0, 0, 0, time.UTC)
	}))
	checker.Add("openai", openai)
	checker.Add("anthropic", anthropic)

	mux := http.NewServeMux()
	mux.Handle("/readyz", checker.Handler())
	mux.Handle("/livez", health.LivenessHandler())

	for _, path := range []string{"/livez", "/readyz"} {
		rec := httptest.NewRecorder()
		mux.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, path, nil))
		fmt.Println(path, rec.Code, rec.Header().Get("Content-Type"))
		fmt.Print(rec.Body)
	}
	// Output:
	// /livez 200 application/health+json
	// {"status":"pass"}
	// /readyz 503 application/health+json
	// {
	//   "status": "fail",
	//   "checks": {
	//     "anthropic:circuit": [
	//       {
	//         "componentType": "component",
	//         "observedValue": "isolated",
	//         "status": "fail",
	//         "time": "2025-06-01T12:00:00Z"
	//       }
	//     ],
	//     "openai:circuit": [
	//       {
	//         "componentType": "component",
	//         "observedValue": "closed",
	//         "status": "pass",
	//         "time": "2025-06-01T12:00:00Z"
	//       }
	//     ]
	//   }
	// }
}

// When the application falls back from one provider to the next, one provider down is a
// warning, not a failure: the instance can still answer.
func ExampleWithFallback() {
	primary, secondary := newPipeline("openai"), newPipeline("anthropic")
	checker := health.NewChecker(health.WithFallback())
	checker.AddAll(map[string]*resilience.Pipeline{"openai": primary, "anthropic": secondary})

	primary.Isolate()
	r := checker.Report()
	fmt.Println(r.Status, r.Status.HTTPStatus())

	secondary.Isolate()
	r = checker.Report()
	fmt.Println(r.Status, r.Status.HTTPStatus())
	// Output:
	// warn 200
	// fail 503
}

// Check has the func(context.Context) error shape that Go health libraries take, so the
// checker plugs into one without an adapter, and without steady depending on it:
//
//	// github.com/alexliesenfeld/health
//	checker := health.NewChecker(health.WithCheck(health.Check{
//		Name:  "llm-providers",
//		Check: llmChecker.Check,
//	}))
//
//	// github.com/hellofresh/health-go/v5
//	h, _ := health.New(health.WithComponent(health.Component{Name: "my-app"}))
//	_ = h.Register(health.Config{Name: "llm-providers", Timeout: time.Second, Check: llmChecker.Check})
//
// Register it with the library's readiness checks only. Check returns nil for pass and
// warn, so a half-open circuit or a fallback in use does not fail the probe.
func ExampleChecker_Check() {
	openai := newPipeline("openai")
	llmChecker := health.NewChecker()
	llmChecker.Add("openai", openai)

	// What a health library stores and calls on every probe:
	var check func(context.Context) error = llmChecker.Check

	fmt.Println(check(context.Background()))
	openai.Isolate()
	err := check(context.Background())
	fmt.Println(err)
	fmt.Println(errors.Is(err, health.ErrUnhealthy))
	// Output:
	// <nil>
	// health: unhealthy: openai circuit isolated
	// true
}

// Any library that takes a check with its own signature needs a one-line adapter, e.g.
// one without a context.
func ExampleChecker_Check_adapter() {
	llmChecker := health.NewChecker()
	llmChecker.Add("openai", newPipeline("openai"))

	noContext := func() error { return llmChecker.Check(context.Background()) }
	fmt.Println(noContext())
	// Output: <nil>
}
