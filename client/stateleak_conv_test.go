package client_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/steadyllm/steady/client"
	"github.com/steadyllm/steady/providers"
	"github.com/steadyllm/steady/resilience"
)

// One turn of a lab conversation, as a caller that keeps its transcript would play it.

// labAnswer is what a call gave the conversation: the assistant message and its stored answer.
type labAnswer struct {
	msg    providers.Message
	stored *providers.StoredResponse
}

// turn plays one turn of conv: a new user message, a call made one of the ways a caller makes
// it, and the answer kept with its state (and tool results when it called tools).
func (d *labDriver) turn(conv *labConv, turn int) {
	rng := conv.rng
	conv.transcript = append(conv.transcript, providers.Message{Role: providers.RoleUser,
		Content: fmt.Sprintf("conversation %d, turn %d: tell me about %s", conv.id, turn, labWords[rng.IntN(len(labWords))])})
	req := &providers.ChatRequest{MaxTokens: 4096, Store: conv.store, CompactThreshold: conv.compactAt}
	if rng.IntN(5) > 0 {
		req.Reasoning = &providers.Reasoning{Effort: "low", BudgetTokens: 1024}
		if rng.IntN(2) == 0 {
			req.Reasoning.Summary = "auto"
		}
	}
	if rng.IntN(4) == 0 {
		conv.tools = true
		req.ToolChoice = providers.ToolChoice{Mode: providers.ToolChoiceRequired}
	}
	if conv.tools {
		req.Tools = labTools // a transcript with tool calls keeps its tools
	}
	if rng.IntN(8) == 0 {
		// Anthropic's web search, a server tool: its call and results come back as provider
		// blocks, and only Anthropic's routes take the call.
		req.Tools = append(append([]providers.Tool(nil), req.Tools...), labSearch)
		req.ToolChoice = providers.ToolChoice{}
	}
	stored := conv.store == nil || *conv.store
	req.Background = stored && rng.IntN(6) == 0
	stream := rng.IntN(2) == 0
	req.Messages = conv.transcript
	switch way := rng.IntN(10); {
	case way < 4 && conv.server != nil:
		req.Conversation, req.Messages = conv.server, conv.transcript[conv.serverAt:]
	case way >= 4 && way < 7 && conv.last != nil:
		req.Previous, req.Messages = conv.last, conv.transcript[conv.lastAt:]
	case way >= 7 && way < 9:
		req.Messages = providers.PruneCompacted(conv.transcript) // pinned when it holds an item
	}
	tag := fmt.Sprintf("c%d.t%d", conv.id, turn)
	ans, err := d.call(conv, req, stream, tag)
	if _, pinned := req.Pin(); err != nil && pinned {
		// The route that holds the state failed (or this call's providers left it out): the
		// caller replays the transcript it kept, anywhere.
		d.count("pinned call failed, replayed")
		req.Previous, req.Conversation, req.Messages = nil, nil, conv.transcript
		ans, err = d.call(conv, req, stream, tag+".replay")
	}
	if err != nil {
		return
	}
	conv.transcript = append(conv.transcript, ans.msg)
	conv.last, conv.lastAt = ans.stored, len(conv.transcript)
	if req.Conversation != nil {
		conv.serverAt = len(conv.transcript)
	}
	for _, tc := range ans.msg.ToolCalls {
		conv.transcript = append(conv.transcript, providers.Message{Role: providers.RoleTool, ToolCallID: tc.ID, Content: "a word"})
	}
}

// labSearch is Anthropic's web search tool, in the API's own shape.
var labSearch = providers.Tool{System: providers.SystemAnthropic, Raw: []byte(`{"type":"web_search_20250305","name":"web_search","max_uses":1}`)}

// errLabCancelled ends a turn whose background answer the caller cancelled.
var errLabCancelled = errors.New("the caller cancelled the background answer")

// labWords are what the conversations ask about.
var labWords = []string{"rivers", "bridges", "clocks", "lanterns", "ferns", "harbors", "kites", "glaciers"}

// call makes one call of req, streamed or not, in background mode or not, with random
// options: an order of providers, hedging, a rescue mode, a sticky key. It counts the outcome.
func (d *labDriver) call(conv *labConv, req *providers.ChatRequest, stream bool, tag string) (labAnswer, error) {
	rng := conv.rng
	opts := []client.CallOption{client.WithHeader(labCallHeader, tag)}
	if rng.IntN(10) < 8 && !slices.ContainsFunc(req.Tools, func(t providers.Tool) bool { return t.Raw != nil }) {
		order := append([]string(nil), labChain...)
		rng.Shuffle(len(order), func(i, j int) { order[i], order[j] = order[j], order[i] })
		opts = append(opts, client.WithProviders(order[:1+rng.IntN(len(order))]...))
	}
	if rng.IntN(10) < 3 {
		opts = append(opts, client.WithHedge(10*time.Millisecond, 1+rng.IntN(2)))
	}
	if rng.IntN(10) < 3 {
		opts = append(opts, client.WithStickyKey(fmt.Sprint(conv.id)))
	}
	if stream {
		modes := []string{resilience.RescueOff, resilience.RescueRestart, resilience.RescueBuffer}
		opts = append(opts, client.WithRescue(modes[rng.IntN(len(modes))]))
	}
	d.hold(tag, req)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var ans labAnswer
	var err error
	switch {
	case stream:
		ans, err = d.stream(ctx, req, opts)
	case req.Background:
		ans, err = d.background(ctx, conv, req, opts)
	default:
		var resp *providers.ChatResponse
		if resp, err = d.c.Chat(ctx, req, opts...); err == nil {
			ans = labAnswer{msg: resp.Message, stored: resp.Stored}
			d.paths(client.Accounting{FailedAttempts: resp.FailedAttempts, Hedges: resp.Hedges, HedgeWon: resp.HedgeWon}, 0)
		}
	}
	d.tallyCall(req, stream, err)
	return ans, err
}

// hold notes the state the request of call carries, for the check.
func (d *labDriver) hold(call string, req *providers.ChatRequest) {
	b, err := json.Marshal(req)
	if err != nil {
		d.unexpectedf("%s: %v", call, err)
	}
	d.mu.Lock()
	d.heldBy[call] = stateIn(string(b))
	d.mu.Unlock()
}

// stream reads a streamed answer whole: its text, its tool calls, and the Done delta's
// reasoning and stored answer (a Restart delta starts the answer over).
func (d *labDriver) stream(ctx context.Context, req *providers.ChatRequest, opts []client.CallOption) (labAnswer, error) {
	st, err := d.c.ChatStream(ctx, req, opts...)
	if err != nil {
		return labAnswer{}, err
	}
	defer st.Close()
	restarts := 0
	defer func() { d.paths(st.Accounting(), restarts) }()
	var text strings.Builder
	var calls []providers.ToolCall
	ans := labAnswer{}
	for delta, err := range st.Deltas() {
		if err != nil {
			return labAnswer{}, err
		}
		if delta.Restart {
			restarts++
			text.Reset()
			calls = nil
		}
		text.WriteString(delta.Text)
		for _, tc := range delta.ToolCalls {
			for len(calls) <= tc.Index {
				calls = append(calls, providers.ToolCall{})
			}
			c := &calls[tc.Index]
			c.ID, c.Name, c.Arguments = c.ID+tc.ID, c.Name+tc.Name, c.Arguments+tc.Arguments
		}
		if delta.Done {
			ans.msg.Thinking, ans.msg.ProviderBlocks, ans.msg.Compaction = delta.Thinking, delta.ProviderBlocks, delta.Compaction
			ans.stored = delta.Stored
		}
	}
	ans.msg.Role, ans.msg.Content, ans.msg.ToolCalls = providers.RoleAssistant, text.String(), calls
	return ans, nil
}

// background starts an answer in background mode and reads it back until it is done, or
// cancels it (one time in five) and gives up the turn.
func (d *labDriver) background(ctx context.Context, conv *labConv, req *providers.ChatRequest, opts []client.CallOption) (labAnswer, error) {
	resp, err := d.c.Chat(ctx, req, opts...)
	if err != nil {
		return labAnswer{}, err
	}
	if resp.Stored == nil {
		return labAnswer{}, fmt.Errorf("a background answer without its stored answer: %+v", resp)
	}
	if conv.rng.IntN(5) == 0 {
		if _, err := d.c.Cancel(ctx, *resp.Stored); err != nil {
			return labAnswer{}, err
		}
		return labAnswer{}, errLabCancelled
	}
	for i := 0; resp.Status.Pending(); i++ {
		if i == 8 {
			return labAnswer{}, fmt.Errorf("still %s after %d reads", resp.Status, i)
		}
		if resp, err = d.c.Retrieve(ctx, *resp.Stored); err != nil {
			return labAnswer{}, err
		}
	}
	return labAnswer{msg: resp.Message, stored: resp.Stored}, nil
}

// paths counts the ways a call went: after failed attempts, hedged, rescued.
func (d *labDriver) paths(acct client.Accounting, restarts int) {
	if acct.FailedAttempts > 0 {
		d.count("path: served after failed attempts")
	}
	if acct.Hedges > 0 {
		d.count("path: hedged")
	}
	if acct.HedgeWon {
		d.count("path: a hedge served")
	}
	if restarts > 0 {
		d.count("path: stream rescued (restart)")
	}
}

// tallyCall counts the outcome of a call. Failures are expected (a third of the requests
// fail); what the request itself caused is not, except a call that none of the providers it
// names can serve (a pinned call whose route they leave out, a background call none of them
// can store, a web search without Anthropic).
func (d *labDriver) tallyCall(req *providers.ChatRequest, stream bool, err error) {
	d.mu.Lock()
	d.calls++
	d.mu.Unlock()
	way := "chat"
	switch {
	case req.Background && stream:
		way = "background stream"
	case req.Background:
		way = "background"
	case stream:
		way = "stream"
	}
	switch pin, _ := req.Pin(); {
	case req.Previous != nil:
		way += " from previous"
	case req.Conversation != nil:
		way += " in a conversation"
	case strings.Contains(pin.What, "compaction"):
		way += " of a pruned transcript"
	}
	var perr *providers.Error
	switch {
	case err == nil:
		d.count(way + " ok")
	case errors.Is(err, errLabCancelled):
		d.count(way + " cancelled")
	case errors.As(err, &perr) && perr.Kind == providers.KindBadRequest:
		if strings.Contains(perr.Message, "no provider of the chain can serve this call") {
			d.count(way + " refused before sending")
			return
		}
		d.unexpectedf("%s: %v", way, err)
	case errors.As(err, &perr):
		d.count(way + " failed")
	default:
		d.unexpectedf("%s: not a *providers.Error: %v", way, err)
	}
}
