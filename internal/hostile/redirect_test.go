package hostile_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"

	"github.com/steadyllm/steady/providers"
)

// thief records whatever reaches it: after a redirect, nothing may.
type thief struct {
	mu   sync.Mutex
	reqs []string // method, headers and body of every request
}

func (th *thief) handler(w http.ResponseWriter, r *http.Request) {
	body := make([]byte, 1<<10)
	n, _ := r.Body.Read(body)
	th.mu.Lock()
	th.reqs = append(th.reqs, r.Method+" "+r.URL.Path+" "+r.Header.Get("Authorization")+r.Header.Get("X-Api-Key")+
		r.Header.Get("Api-Key")+" "+string(body[:n]))
	th.mu.Unlock()
}

func (th *thief) seen() []string {
	th.mu.Lock()
	defer th.mu.Unlock()
	return append([]string(nil), th.reqs...)
}

// Rule 1: whatever a server answers, no API key header and no request body reaches an origin
// other than the configured one, for every provider kind, through client.New, steady.FromConfig
// and a provider given a plain http.Client.
func TestRedirects_NeverReachAnotherOrigin(t *testing.T) {
	th := &thief{}
	plain := httptest.NewServer(http.HandlerFunc(th.handler))
	defer plain.Close()
	tls := httptest.NewTLSServer(http.HandlerFunc(th.handler))
	defer tls.Close()
	port := plain.URL[strings.LastIndex(plain.URL, ":")+1:]
	locations := map[string]string{
		"another port":   plain.URL + "/v1/chat/completions?key=QUERYSECRET",
		"another host":   "http://localhost:" + port + "/steal?key=QUERYSECRET",
		"another scheme": tls.URL + "/steal?key=QUERYSECRET",
		"relative":       "/elsewhere?key=QUERYSECRET",
	}
	for where, loc := range locations {
		for _, code := range []int{301, 302, 303, 307, 308} {
			var hits int
			var mu sync.Mutex
			origin := server(t, func(w http.ResponseWriter, r *http.Request) {
				mu.Lock()
				hits++
				mu.Unlock()
				w.Header().Set("Location", loc)
				w.Header().Set("Content-Type", "application/json")
				w.WriteHeader(code)
			})
			for _, k := range kinds {
				builds := map[string]func() providerRunner{
					"client.New": func() providerRunner {
						c := newClient(t, k, origin.URL, policy(), providers.Limits{})
						return func(op string) error { return run(context.Background(), c, op) }
					},
					"steady.FromConfig": func() providerRunner {
						c := fromConfig(t, k, origin.URL)
						return func(op string) error { return run(context.Background(), c, op) }
					},
					"provider with a plain http.Client": func() providerRunner {
						// A client that follows redirects, and trusts the TLS target: the
						// provider must refuse anyway.
						hc := tls.Client()
						p, err := k.build("p", k.baseURL(origin.URL), hc, providers.Limits{})
						if err != nil {
							t.Fatal(err)
						}
						return providerOps(p)
					},
				}
				for how, build := range builds {
					runOp := build()
					for _, op := range ops(k) {
						mu.Lock()
						hits = 0
						mu.Unlock()
						err := runOp(op)
						e := asError(t, err)
						if e.Kind != providers.KindRedirected || e.StatusCode != code {
							t.Fatalf("%s %d, %s via %s, %s: %s (HTTP %d), want redirected %d: %v",
								where, code, k.name, how, op, e.Kind, e.StatusCode, code, err)
						}
						if strings.Contains(err.Error(), "QUERYSECRET") || strings.Contains(err.Error(), "/steal") {
							t.Fatalf("%s %d, %s via %s: the error repeats the Location: %v", where, code, k.name, how, err)
						}
						mu.Lock()
						n := hits
						mu.Unlock()
						if n != 1 {
							t.Fatalf("%s %d, %s via %s, %s: the origin saw %d requests, want 1 (no retry, no follow)",
								where, code, k.name, how, op, n)
						}
					}
				}
			}
		}
	}
	if seen := th.seen(); len(seen) != 0 {
		t.Fatalf("%d requests reached another origin, the first: %q", len(seen), seen[0])
	}
}

type providerRunner func(op string) error

// providerOps calls a provider directly.
func providerOps(p providers.Provider) providerRunner {
	return func(op string) error {
		ctx := context.Background()
		switch op {
		case "chat":
			_, err := p.Chat(ctx, ask())
			return err
		case "stream":
			st, err := p.ChatStream(ctx, ask())
			if err != nil {
				return err
			}
			defer st.Close()
			for {
				d, err := st.Recv()
				if err != nil || d.Done {
					return err
				}
			}
		case "embed":
			_, err := p.Embed(ctx, &providers.EmbedRequest{Inputs: []string{"a"}})
			return err
		}
		panic(op)
	}
}

// The advice of docs/official-sdks.md for a bare pipeline under an official SDK holds: the
// pipeline itself refuses, so even an http.Client that would follow sends nothing elsewhere.
func TestRedirects_BarePipelineRefuses(t *testing.T) {
	th := &thief{}
	other := server(t, th.handler)
	origin := server(t, func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, other.URL+"/x?key=QUERYSECRET", http.StatusPermanentRedirect)
	})
	c := newClient(t, kinds[0], origin.URL, policy(), providers.Limits{})
	hc := &http.Client{Transport: c.Pipeline("p").Wrap(http.DefaultTransport)}
	req, _ := http.NewRequest(http.MethodPost, origin.URL, strings.NewReader(`{"secret":"body"}`))
	req.Header.Set("Api-Key", sentinel)
	resp, err := hc.Do(req)
	if err == nil {
		resp.Body.Close()
		t.Fatal("the redirect was followed")
	}
	if u, ok := err.(*url.Error); !ok || strings.Contains(u.Err.Error(), "QUERYSECRET") {
		t.Fatalf("error %v", err)
	}
	if len(th.seen()) != 0 {
		t.Fatalf("reached another origin: %v", th.seen())
	}
}
