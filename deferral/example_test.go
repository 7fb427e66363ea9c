package deferral_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"

	"github.com/steadyllm/steady/client"
	"github.com/steadyllm/steady/deferral"
	"github.com/steadyllm/steady/mocks"
	"github.com/steadyllm/steady/providers"
	"github.com/steadyllm/steady/providers/openai"
	"github.com/steadyllm/steady/resilience"
)

// A job that asks for a long answer without holding a worker: the first run asks in
// background mode and keeps the Awaiting that Defer gives it; each later run looks once, until
// the answer is finished. Here the runs follow each other; a queue would space them by
// Decision.Wait (the queue/asynq and queue/river adapters do all of this).
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

	// Run 1: ask, and keep what to look at.
	resp, err := c.Chat(ctx, &providers.ChatRequest{Background: true,
		Messages: []providers.Message{{Role: providers.RoleUser, Content: "Summarise the quarter."}}}, client.Deferred(1))
	if err != nil {
		panic(err)
	}
	var p *deferral.Pending
	if !errors.As(d.Defer(resp), &p) {
		panic("the answer came at once")
	}
	record, _ := json.Marshal(p.Next) // what the job keeps
	fmt.Println("asked; the answer is", p.Status)

	// Later runs: look once each.
	for run := 2; ; run++ {
		a, err := deferral.ParseAwaiting(record)
		if err != nil {
			panic(err) // a forged record: end the job
		}
		resp, err := d.Await(ctx, c.Background(client.Deferred(1)), a, 1)
		if errors.As(err, &p) {
			record, _ = json.Marshal(p.Next)
			fmt.Println("run", run, "found it", p.Status)
			continue
		}
		if err != nil {
			panic(err) // a *deferral.Error: hand its Decision to the queue
		}
		fmt.Println("run", run, "got:", resp.Message.Content)
		break
	}
	// Output:
	// asked; the answer is queued
	// run 2 found it in_progress
	// run 3 got: Revenue grew 12%.
}
