package statuspage

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/steadyllm/steady/client"
	"github.com/steadyllm/steady/health"
	"github.com/steadyllm/steady/internal/redact"
	"github.com/steadyllm/steady/resilience"
)

// The bounds of the page's refresh (WithRefresh) and of its open streams (WithMaxViewers).
const (
	// DefaultRefresh is how often an open page looks for changes.
	DefaultRefresh = 250 * time.Millisecond
	// MinRefresh and MaxRefresh bound WithRefresh.
	MinRefresh = 50 * time.Millisecond
	MaxRefresh = 10 * time.Second
	// DefaultMaxViewers is how many pages may be open at once, each holding one stream.
	DefaultMaxViewers = 8
	// MaxViewers bounds WithMaxViewers.
	MaxViewers = 1000
)

// streamLife is the longest one stream stays open: the browser then opens another, so that no
// connection is held forever and a page left open follows a restart of the application.
const streamLife = 10 * time.Minute

// keepAlive is the longest an open stream goes without a message while nothing changes.
const keepAlive = 15 * time.Second

// writeWait is how long one message of a stream may take to write, whatever the server's
// WriteTimeout: a viewer that stops reading is dropped after it.
const writeWait = 10 * time.Second

// Page is the status page of a steady client: an http.Handler that serves the page, its state
// as JSON (?format=json) and a stream of its changes (?format=sse) that keeps an open page up
// to date. Make it with New, mount it where operators can reach it (for example at
// /debug/steady, behind the same access control as the application's other debug endpoints)
// and Close it on shutdown. It is safe for concurrent use.
type Page struct {
	c       *client.Client
	pipes   []namedPipeline
	checker *health.Checker
	scrub   redact.Scrubber
	events  *ring // nil when WithEvents(0)
	refresh time.Duration
	viewers int
	now     func() time.Time

	open   atomic.Int64 // streams open now
	done   chan struct{}
	closed atomic.Bool
	once   sync.Once
	stop   func() // unsubscribes the page from the client's and pipelines' events

	mu    sync.Mutex
	cache frame // the last state rendered, shared by the streams open at once
}

type namedPipeline struct {
	name string
	p    *resilience.Pipeline
}

// Option configures a Page.
type Option func(*settings)

type settings struct {
	pipes   []namedPipeline
	events  int
	secrets []string
	refresh time.Duration
	viewers int
	now     func() time.Time
	errs    []error
}

// WithPipeline shows a bare resilience pipeline beside (or, with a nil client, instead of)
// the client's providers, under name: for an application that wraps its own http.Client with
// a pipeline. Its events are recorded as the client's are. name must not be empty nor used
// twice, nor a name of the client's providers or deployments; p not nil.
func WithPipeline(name string, p *resilience.Pipeline) Option {
	return func(s *settings) {
		if name == "" || p == nil {
			s.errs = append(s.errs, fmt.Errorf("statuspage: WithPipeline(%q, %v): needs a name and a pipeline", name, p))
			return
		}
		for _, np := range s.pipes {
			if np.name == name {
				s.errs = append(s.errs, fmt.Errorf("statuspage: WithPipeline(%q): the name is used twice", name))
				return
			}
		}
		s.pipes = append(s.pipes, namedPipeline{name: name, p: p})
	}
}

// WithEvents sets how many of the latest notable events the page keeps and shows: 0 to
// MaxEvents, default DefaultEvents. 0 records none, and the page then never listens to the
// pipelines at all.
func WithEvents(n int) Option {
	return func(s *settings) {
		if n < 0 || n > MaxEvents {
			s.errs = append(s.errs, fmt.Errorf("statuspage: WithEvents(%d): must be 0 to %d", n, MaxEvents))
			return
		}
		s.events = n
	}
}

// WithSecrets names strings the page must never show — the API keys, for example — beside
// what it hides anyway (URLs beyond scheme://host, bearer tokens, key=value credentials, sk-…
// keys): any text the page shows from an error or a name has them masked, whole or any start
// of them at least 8 long. Values shorter than 5 are ignored.
func WithSecrets(secrets ...string) Option {
	return func(s *settings) { s.secrets = append(s.secrets, secrets...) }
}

// WithRefresh sets how often an open page looks for changes: MinRefresh to MaxRefresh,
// default DefaultRefresh. A change reaches the browser within about this long; nothing is
// read while no page is open.
func WithRefresh(d time.Duration) Option {
	return func(s *settings) {
		if d < MinRefresh || d > MaxRefresh {
			s.errs = append(s.errs, fmt.Errorf("statuspage: WithRefresh(%s): must be %s to %s", d, MinRefresh, MaxRefresh))
			return
		}
		s.refresh = d
	}
}

// WithMaxViewers sets how many pages may be open at once (each holds one stream): 1 to
// MaxViewers, default DefaultMaxViewers. One more is answered 503 with Retry-After, and shows
// the state it loaded without updates.
func WithMaxViewers(n int) Option {
	return func(s *settings) {
		if n < 1 || n > MaxViewers {
			s.errs = append(s.errs, fmt.Errorf("statuspage: WithMaxViewers(%d): must be 1 to %d", n, MaxViewers))
			return
		}
		s.viewers = n
	}
}

// New makes the status page of c: every provider of c, its deployments and their routes, and
// the pipelines of WithPipeline (c may be nil when there are some). It starts listening to
// their events at once (client.Client.Watch), keeping the latest notable ones in a bounded
// buffer, until Close; a page that is never made costs the calls nothing. Nothing else runs
// until someone opens the page. New returns an error naming the option, its value and the
// allowed range when an option is out of range.
func New(c *client.Client, opts ...Option) (*Page, error) {
	s := settings{events: DefaultEvents, refresh: DefaultRefresh, viewers: DefaultMaxViewers, now: time.Now}
	for _, o := range opts {
		if o != nil {
			o(&s)
		}
	}
	if c == nil && len(s.pipes) == 0 {
		s.errs = append(s.errs, errors.New("statuspage: New with a nil client and no WithPipeline: nothing to show"))
	}
	if c != nil {
		circuits := c.Circuits()
		for _, np := range s.pipes {
			if _, dup := circuits[np.name]; dup {
				s.errs = append(s.errs, fmt.Errorf("statuspage: WithPipeline(%q): the client has a provider or deployment of that name", np.name))
			}
		}
	}
	if err := errors.Join(s.errs...); err != nil {
		return nil, err
	}
	var checker *health.Checker
	if c != nil && len(c.Chain()) > 1 {
		checker = health.NewChecker(health.WithFallback())
	} else {
		checker = health.NewChecker()
	}
	if c != nil {
		checker.AddSet(c)
	}
	for _, np := range s.pipes {
		checker.Add(np.name, np.p)
	}
	p := &Page{c: c, pipes: s.pipes, checker: checker, scrub: redact.New(s.secrets...), refresh: s.refresh,
		viewers: s.viewers, now: s.now, done: make(chan struct{}), stop: func() {}}
	if s.events > 0 {
		p.events = newRing(s.events)
		var stops []func()
		if c != nil {
			stops = append(stops, c.Watch(p.events.observe, watched...))
		}
		for _, np := range s.pipes {
			stops = append(stops, np.p.Watch(p.events.observe, watched...))
		}
		p.stop = func() {
			for _, stop := range stops {
				stop()
			}
		}
	}
	return p, nil
}

// Close unmounts the page: it stops listening to the pipelines' events, so that calls pay
// nothing for it any more, and ends the streams of open pages. The handler then answers 503.
// Close is idempotent and always returns nil.
func (p *Page) Close() error {
	p.once.Do(func() {
		p.closed.Store(true)
		p.stop()
		close(p.done)
	})
	return nil
}

// ServeHTTP serves, for GET and HEAD, the page (HTML), its state as JSON with ?format=json,
// or with ?format=sse a stream of server-sent events, each the state rendered anew, that the
// page's script reads to keep itself up to date. The query alone picks the form, so the page
// works at any path it is mounted on, with or without a trailing slash. Other methods get 405,
// an unknown format 400, a closed page 503. Every answer carries Cache-Control: no-store and
// a Content-Security-Policy that allows only the page's own inline style and script (by their
// hashes) and connections to its own origin.
func (p *Page) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h := w.Header()
	secure(h)
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		h.Set("Allow", "GET, HEAD")
		http.Error(w, "statuspage: only GET and HEAD", http.StatusMethodNotAllowed)
		return
	}
	if p.closed.Load() {
		http.Error(w, "statuspage: the page was closed", http.StatusServiceUnavailable)
		return
	}
	switch r.URL.Query().Get("format") {
	case "", "html":
		body := renderPage(p.frame(0)) // a page loaded shows the state of the moment
		h.Set("Content-Type", "text/html; charset=utf-8")
		send(w, r, body)
	case "json":
		body, err := json.MarshalIndent(p.Snapshot(), "", "  ")
		if err != nil { // cannot happen: the snapshot holds strings and numbers only
			http.Error(w, "statuspage: cannot encode the state", http.StatusInternalServerError)
			return
		}
		h.Set("Content-Type", "application/json")
		send(w, r, append(body, '\n'))
	case "sse":
		p.stream(w, r)
	default:
		http.Error(w, `statuspage: format must be "html", "json" or "sse"`, http.StatusBadRequest)
	}
}

// secure sets the headers every answer of the page carries.
func secure(h http.Header) {
	h.Set("Content-Security-Policy", contentSecurityPolicy)
	h.Set("Cache-Control", "no-store")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "no-referrer")
	h.Set("X-Frame-Options", "DENY")
	h.Set("Cross-Origin-Opener-Policy", "same-origin")
	h.Set("Cross-Origin-Resource-Policy", "same-origin")
}

// send writes body, or for HEAD only its length.
func send(w http.ResponseWriter, r *http.Request, body []byte) {
	w.Header().Set("Content-Length", strconv.Itoa(len(body)))
	w.WriteHeader(http.StatusOK)
	if r.Method != http.MethodHead {
		_, _ = w.Write(body) // the viewer went away: nothing left to tell it
	}
}
