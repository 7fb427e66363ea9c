package deferral_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/steadyllm/steady/client"
	"github.com/steadyllm/steady/deferral"
	"github.com/steadyllm/steady/mocks"
	"github.com/steadyllm/steady/providers"
	"github.com/steadyllm/steady/providers/openai"
	"github.com/steadyllm/steady/resilience"
)

// docs:begin await-ask
// askInBackground is a job's first run: it asks in background mode and returns the record to
// keep with the job and when to come back — or the answer, when it came at once.
func askInBackground(ctx context.Context, c *client.Client, d deferral.Decider, req *providers.ChatRequest,
	attempt int) (record []byte, wait time.Duration, resp *providers.ChatResponse, err error) {
	req.Background = true
	resp, err = c.Chat(ctx, req, client.Deferred(attempt))
	if err != nil {
		return nil, 0, nil, err // a *deferral.Error: ask again at its Decision, or end the job
	}
	var p *deferral.Pending
	if err := d.Defer(resp); !errors.As(err, &p) {
		return nil, 0, resp, err // the answer came at once (or, rarely, a permanent *deferral.Error)
	}
	record, err = json.Marshal(p.Next) // the answer's ID and origin, the looks so far, the start
	return record, p.Decision.Wait(time.Now()), nil, err
}

// docs:end await-ask

// docs:begin await-look
// lookOnce is each later run: it looks at the answer once, and returns the next record and when
// to come back while the answer is pending.
func lookOnce(ctx context.Context, c *client.Client, d deferral.Decider, record []byte,
	attempt int) (next []byte, wait time.Duration, resp *providers.ChatResponse, err error) {
	a, err := deferral.ParseAwaiting(record) // read back from a queue: bounded and checked
	if err != nil {
		return nil, 0, nil, err // bad_request: end the job; nothing was sent anywhere
	}
	resp, err = d.Await(ctx, c.Background(client.Deferred(attempt)), a, attempt)
	var p *deferral.Pending
	if errors.As(err, &p) { // queued or in progress: look again later
		next, err = json.Marshal(p.Next)
		return next, p.Decision.Wait(time.Now()), nil, err
	}
	return nil, 0, resp, err // the answer, or a *deferral.Error: retry at its Decision, or end the job
}

// docs:end await-look

// A job that asks for a long answer without holding a worker: the first run asks in
// background mode and keeps the Awaiting that Defer gives it; each later run looks once, until
// the answer is finished. Here the runs follow each other; a queue would space them by the
// wait each run returns (the queue/asynq and queue/river adapters do all of this).
func ExampleDecider_Await() {
	s := mocks.NewServer(mocks.WithReply("Revenue grew 12%."))
	defer s.Close()
	c, err := client.New(client.WithProvider("openai", resilience.DefaultOptions(), func(hc *http.Client) (providers.Provider, error) {
		return openai.New(openai.Config{API: openai.Responses, BaseURL: s.OpenAIBaseURL(), APIKey: "sk-example", HTTPClient: hc, Model: "gpt-5"})
	}))
	if err != nil {
		panic(err)
	}
	var d deferral.Decider
	ctx := context.Background()

	record, _, _, err := askInBackground(ctx, c, d, &providers.ChatRequest{
		Messages: []providers.Message{{Role: providers.RoleUser, Content: "Summarise the quarter."}}}, 1)
	if err != nil || record == nil {
		panic(fmt.Sprint("no record to keep: ", err))
	}
	fmt.Println("run 1 asked")
	for run := 2; ; run++ {
		next, _, resp, err := lookOnce(ctx, c, d, record, 1)
		if err != nil {
			panic(err)
		}
		if resp != nil {
			fmt.Println("run", run, "got:", resp.Message.Content)
			break
		}
		fmt.Println("run", run, "found it pending")
		record = next
	}
	// A forged record ends the job before anything is sent.
	_, _, _, err = lookOnce(ctx, c, d, []byte(`{"v":1,"id":"../../files","origin":"x","polls":0,"started":"2026-01-01T00:00:00Z"}`), 1)
	fmt.Println("forged:", providers.KindOf(err), "; requests in all:", s.Journal().Len())
	// Output:
	// run 1 asked
	// run 2 found it pending
	// run 3 got: Revenue grew 12%.
	// forged: bad_request ; requests in all: 3
}
