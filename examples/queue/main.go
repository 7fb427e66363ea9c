// Command queue shows deferred retry: workers summarise documents through steady in
// deferred mode, and a failed call goes back to the job queue with the time its deferral
// decision gives, instead of a worker sleeping through it. The fake server answers the first
// call 429 with a "retry in 1.5 s" hint, then 529 (overloaded) once, then normally.
//
// The queue here is a few lines in memory, so the example runs with nothing installed; in an
// application it is River, asynq (github.com/steadyllm/steady/queue/asynq) or Temporal.
//
//	go run ./examples/queue
package main

import (
	"container/heap"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"sync"
	"time"

	"github.com/steadyllm/steady/client"
	"github.com/steadyllm/steady/deferral"
	"github.com/steadyllm/steady/mocks"
	"github.com/steadyllm/steady/providers"
	"github.com/steadyllm/steady/providers/anthropic"
	"github.com/steadyllm/steady/resilience"
)

func main() {
	if err := run(context.Background(), os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "queue:", err)
		os.Exit(1)
	}
}

// job is one document to summarise.
type job struct {
	id      int
	doc     string
	attempt int       // the job's attempt number, from 1
	due     time.Time // when the queue hands it to a worker
}

// jobs is the queue's schedule: the earliest due job first.
type jobs []*job

func (q jobs) Len() int           { return len(q) }
func (q jobs) Less(i, j int) bool { return q[i].due.Before(q[j].due) }
func (q jobs) Swap(i, j int)      { q[i], q[j] = q[j], q[i] }
func (q *jobs) Push(x any)        { *q = append(*q, x.(*job)) }
func (q *jobs) Pop() any {
	old := *q
	j := old[len(old)-1]
	*q = old[:len(old)-1]
	return j
}

func run(ctx context.Context, out io.Writer) error {
	fake := mocks.NewServer(mocks.WithScript(mocks.RateLimited(1500*time.Millisecond), mocks.Overloaded(), mocks.OK().Always()))
	defer fake.Close()
	policy := resilience.DefaultOptions()
	policy.RetryBaseDelaySeconds = 0.5
	c, err := client.New(client.WithProvider("claude", policy, func(hc *http.Client) (providers.Provider, error) {
		return anthropic.New(anthropic.Config{Name: "claude", BaseURL: fake.AnthropicBaseURL(), APIKey: "sk-ant-example",
			HTTPClient: hc, Model: "claude-haiku-4-5"})
	}))
	if err != nil {
		return err
	}
	defer c.CloseIdleConnections()

	start := time.Now()
	var mu sync.Mutex
	queue := &jobs{}
	for i, doc := range []string{"the annual report", "the meeting notes", "the design review"} {
		heap.Push(queue, &job{id: i + 1, doc: doc, attempt: 1, due: start})
	}
	pending := queue.Len()
	var longestWork time.Duration
	var wg sync.WaitGroup
	for w := 1; w <= 2; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				mu.Lock()
				if pending == 0 {
					mu.Unlock()
					return
				}
				if queue.Len() == 0 || (*queue)[0].due.After(time.Now()) {
					mu.Unlock()
					time.Sleep(10 * time.Millisecond) // the queue's poll, not a retry wait
					continue
				}
				j := heap.Pop(queue).(*job)
				mu.Unlock()

				began := time.Now()
				resp, err := c.Chat(ctx, &providers.ChatRequest{Messages: []providers.Message{
					{Role: providers.RoleUser, Content: "Summarise " + j.doc}}}, client.Deferred(j.attempt))
				took := time.Since(began)

				mu.Lock()
				longestWork = max(longestWork, took)
				var de *deferral.Error
				switch {
				case err == nil:
					pending--
					fmt.Fprintf(out, "job %d attempt %d at %s: done: %q\n", j.id, j.attempt, since(start), resp.Message.Content)
				case errors.As(err, &de) && de.Decision.Retry:
					fmt.Fprintf(out, "job %d attempt %d at %s: %s; back at %s (%s)\n", j.id, j.attempt, since(start),
						kindOf(err), offset(de.Decision.At.Sub(start)), de.Decision.Source)
					j.attempt++
					j.due = de.Decision.At
					heap.Push(queue, j)
				default:
					pending--
					fmt.Fprintf(out, "job %d attempt %d: gave up for good: %v\n", j.id, j.attempt, err)
				}
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	fmt.Fprintf(out, "all jobs finished; the longest a worker spent on one call: %s (no worker slept through a hint)\n",
		longestWork.Round(100*time.Millisecond))
	return nil
}

func since(t time.Time) string { return offset(time.Since(t)) }

func offset(d time.Duration) string { return fmt.Sprintf("+%.1fs", d.Seconds()) }

func kindOf(err error) providers.ErrorKind {
	var pe *providers.Error
	if errors.As(err, &pe) {
		return pe.Kind
	}
	return ""
}
