package steadyriver_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/riverqueue/river/rivermigrate"

	"github.com/steadyllm/steady/client"
	"github.com/steadyllm/steady/internal/testkit/backend"
	"github.com/steadyllm/steady/mocks"
	"github.com/steadyllm/steady/providers"
	"github.com/steadyllm/steady/providers/openai"
	steadyriver "github.com/steadyllm/steady/queue/river"
	"github.com/steadyllm/steady/resilience"
)

var databaseURL string

// TestMain starts a PostgreSQL server of its own on 127.0.0.1, on a free port, in a temporary
// directory (as the postgres user when the tests run as root, which PostgreSQL refuses), and
// stops it by its PID. Without PostgreSQL the tests are skipped, except under CI, where they
// must run.
func TestMain(m *testing.M) {
	bin := pgBin()
	if bin == "" {
		if os.Getenv("CI") == "true" {
			fmt.Fprintln(os.Stderr, "PostgreSQL is not installed, and CI=true: the River tests must run (apt-get install -y postgresql)")
			os.Exit(1)
		}
		fmt.Fprintln(os.Stderr, "skipping the River tests: PostgreSQL is not installed (apt-get install -y postgresql)")
		os.Exit(0)
	}
	dir, err := os.MkdirTemp("", "steady-river-pg")
	if err != nil {
		panic(err)
	}
	defer os.RemoveAll(dir)
	cred := asPostgres(dir)
	initdb := exec.Command(filepath.Join(bin, "initdb"), "-D", filepath.Join(dir, "data"), "-U", "postgres", "--auth=trust", "-E", "UTF8")
	initdb.SysProcAttr = cred
	if out, err := initdb.CombinedOutput(); err != nil {
		panic(fmt.Sprintf("initdb: %v\n%s", err, out))
	}
	port := backend.FreePort()
	pg := exec.Command(filepath.Join(bin, "postgres"), "-D", filepath.Join(dir, "data"), "-p", strconv.Itoa(port),
		"-h", "127.0.0.1", "-k", dir, "-c", "fsync=off")
	pg.SysProcAttr = cred
	if err := pg.Start(); err != nil {
		panic(err)
	}
	stop := func() {
		_ = pg.Process.Signal(syscall.SIGINT) // fast shutdown
		_ = pg.Wait()
	}
	databaseURL = fmt.Sprintf("postgres://postgres@127.0.0.1:%d/postgres?sslmode=disable", port)
	if err := waitReady(); err != nil {
		stop()
		panic(err)
	}
	code := m.Run()
	stop()
	os.RemoveAll(dir)
	os.Exit(code)
}

// pgBin finds the directory of initdb and postgres: on the PATH, or where Debian's package
// puts them.
func pgBin() string {
	if p, err := exec.LookPath("initdb"); err == nil {
		return filepath.Dir(p)
	}
	matches, _ := filepath.Glob("/usr/lib/postgresql/*/bin/initdb")
	if len(matches) > 0 {
		return filepath.Dir(matches[len(matches)-1])
	}
	return ""
}

// asPostgres returns the credentials to run PostgreSQL with, handing dir to the postgres user
// when the tests run as root; nil otherwise.
func asPostgres(dir string) *syscall.SysProcAttr {
	if os.Geteuid() != 0 {
		return nil
	}
	u, err := user.Lookup("postgres")
	if err != nil {
		panic("running as root without a postgres user to run PostgreSQL as")
	}
	uid, _ := strconv.Atoi(u.Uid)
	gid, _ := strconv.Atoi(u.Gid)
	if err := os.Chown(dir, uid, gid); err != nil {
		panic(err)
	}
	return &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}}
}

func waitReady() error {
	deadline := time.Now().Add(30 * time.Second)
	for {
		pool, err := pgxpool.New(context.Background(), databaseURL)
		if err == nil {
			err = pool.Ping(context.Background())
			pool.Close()
			if err == nil {
				return nil
			}
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("PostgreSQL did not start: %w", err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// summariseArgs is a job: which provider to call.
type summariseArgs struct {
	Provider string `json:"provider"`
}

func (summariseArgs) Kind() string { return "summarise" }

// run is one run of a job.
type run struct {
	at      time.Time
	attempt int
}

type summariseWorker struct {
	river.WorkerDefaults[summariseArgs]
	c    *client.Client
	mu   sync.Mutex
	runs map[string][]run
}

func (w *summariseWorker) Work(ctx context.Context, job *river.Job[summariseArgs]) error {
	w.mu.Lock()
	w.runs[job.Args.Provider] = append(w.runs[job.Args.Provider], run{time.Now(), job.Attempt})
	w.mu.Unlock()
	_, err := w.c.Chat(ctx, &providers.ChatRequest{Messages: []providers.Message{{Role: providers.RoleUser, Content: "summarise"}}},
		client.Deferred(job.Attempt), client.WithProviders(job.Args.Provider))
	return err
}

func factory(s *mocks.Server) client.ProviderFactory {
	return func(hc *http.Client) (providers.Provider, error) {
		return openai.New(openai.Config{Name: "openai", BaseURL: s.OpenAIBaseURL(), APIKey: "sk-test", HTTPClient: hc, Model: "gpt-4o-mini"})
	}
}

// A rate-limited job is snoozed to the hint without using an attempt; an overloaded one is
// retried at its backoff as a counted attempt; a refused one is cancelled after one run.
func TestRiver_SnoozesRetriesAndCancelsAsTheDecisionSays(t *testing.T) {
	ctx := context.Background()
	limited := mocks.NewServer(mocks.WithScript(mocks.RateLimited(1500*time.Millisecond), mocks.OK()))
	defer limited.Close()
	overloaded := mocks.NewServer(mocks.WithScript(mocks.Overloaded(), mocks.OK()))
	defer overloaded.Close()
	refused := mocks.NewServer(mocks.WithAPIKey("another key"))
	defer refused.Close()
	o := resilience.DefaultOptions()
	o.RetryBaseDelaySeconds = 0.5
	c, err := client.New(client.WithProvider("limited", o, factory(limited)),
		client.WithProvider("overloaded", o, factory(overloaded)), client.WithProvider("refused", o, factory(refused)))
	if err != nil {
		t.Fatal(err)
	}
	defer c.CloseIdleConnections()

	pool, err := pgxpool.New(ctx, databaseURL)
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	migrator, err := rivermigrate.New(riverpgxv5.New(pool), nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := migrator.Migrate(ctx, rivermigrate.DirectionUp, nil); err != nil {
		t.Fatal(err)
	}
	w := &summariseWorker{c: c, runs: map[string][]run{}}
	workers := river.NewWorkers()
	river.AddWorker[summariseArgs](workers, steadyriver.Wrap[summariseArgs](w))
	rc, err := river.NewClient(riverpgxv5.New(pool), &river.Config{
		Queues:            map[string]river.QueueConfig{river.QueueDefault: {MaxWorkers: 3}},
		Workers:           workers,
		FetchPollInterval: 50 * time.Millisecond,
		FetchCooldown:     10 * time.Millisecond,
		Logger:            nil,
	})
	if err != nil {
		t.Fatal(err)
	}
	events, cancel := rc.Subscribe(river.EventKindJobCompleted, river.EventKindJobCancelled)
	defer cancel()
	if err := rc.Start(ctx); err != nil {
		t.Fatal(err)
	}
	defer func() {
		stopCtx, c := context.WithTimeout(ctx, 10*time.Second)
		defer c()
		_ = rc.Stop(stopCtx)
	}()
	for _, p := range []string{"limited", "overloaded", "refused"} {
		if _, err := rc.Insert(ctx, summariseArgs{Provider: p}, &river.InsertOpts{MaxAttempts: 5}); err != nil {
			t.Fatal(err)
		}
	}
	outcome := map[string]river.EventKind{}
	timeout := time.After(30 * time.Second)
	for len(outcome) < 3 {
		select {
		case ev := <-events:
			var args summariseArgs
			if err := json.Unmarshal(ev.Job.EncodedArgs, &args); err != nil {
				t.Fatal(err)
			}
			outcome[args.Provider] = ev.Kind
		case <-timeout:
			t.Fatalf("jobs did not finish: %v, runs %v", outcome, w.runs)
		}
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if outcome["limited"] != river.EventKindJobCompleted || outcome["overloaded"] != river.EventKindJobCompleted ||
		outcome["refused"] != river.EventKindJobCancelled {
		t.Fatalf("outcomes %v", outcome)
	}
	lim := w.runs["limited"]
	if len(lim) != 2 || lim[1].at.Sub(lim[0].at) < 1400*time.Millisecond || lim[1].attempt != lim[0].attempt {
		t.Fatalf("limited runs %+v: want a second run after the 1.5 s hint, on the same attempt (snoozed)", lim)
	}
	ov := w.runs["overloaded"]
	if len(ov) != 2 || ov[1].attempt != ov[0].attempt+1 || ov[1].at.Sub(ov[0].at) < 200*time.Millisecond {
		t.Fatalf("overloaded runs %+v: want a counted second attempt after the backoff", ov)
	}
	if n := len(w.runs["refused"]); n != 1 || refused.Journal().Len() != 1 {
		t.Fatalf("the refused job ran %d times", n)
	}
}
