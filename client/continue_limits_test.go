package client_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/steadyllm/steady/client"
	"github.com/steadyllm/steady/mocks"
	"github.com/steadyllm/steady/providers"
	"github.com/steadyllm/steady/providers/openai"
	"github.com/steadyllm/steady/resilience"
)

// The limits of continuing a cut answer: what is carried over, and what is not continued.

// its failure and Partial, and the fallback is never asked.
func TestChatStream_ContinueCarriesABoundedAnswer(t *testing.T) {
	answer := words("w", 20000) // about 130 KB, in 4,096 events of 5 words
	primary := mocks.NewServer(mocks.WithScript(cutAt(answer, 3000).Always()))
	defer primary.Close()
	claude := mocks.NewServer(mocks.WithReply(answer))
	defer claude.Close()
	_, r := continueToClaude(t, primary, claude)
	if len(r.text) <= 64<<10 {
		t.Fatalf("the cut came after %d bytes: the test needs more than the bound", len(r.text))
	}
	if partialOf(r.err) != r.text || claude.Journal().Len() != 0 {
		t.Fatalf("err %v, fallback asked %d times", r.err, claude.Journal().Len())
	}
}

// the whole JSON, never a splice of two answers.
func TestChatStream_ContinueRestartsAToolCallCutMidJSON(t *testing.T) {
	call := &mocks.ToolCall{ID: "call_1", Name: "lookup", Arguments: `{"city":"Lisbon","days":3,"units":"metric","detail":"hourly"}`}
	cut := mocks.Step{ToolCall: call, Cut: mocks.CutAbort, CutAfter: 2, CountContent: true}
	primary := mocks.NewServer(mocks.WithScript(cut.Always()))
	defer primary.Close()
	whole := mocks.NewServer(mocks.WithScript(mocks.Step{ToolCall: call}.Always()))
	defer whole.Close()
	c := newClient(t, openAIProvider("primary", primary, policy()), anthropicProvider("claude", whole, policy()),
		client.WithFallback("primary", "claude"))
	req := hello()
	req.Tools = []providers.Tool{{Name: "lookup", Parameters: json.RawMessage(`{"type":"object"}`)}}
	st, err := c.ChatStream(context.Background(), req, client.WithRescue(resilience.RescueContinue))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	args := map[int]*strings.Builder{}
	var before string
	restarts := 0
	for d, err := range st.Deltas() {
		if err != nil {
			t.Fatal(err)
		}
		for _, tc := range d.ToolCalls {
			if tc.Restart {
				restarts++
				before = args[tc.Index].String()
				args[tc.Index] = &strings.Builder{}
			}
			if args[tc.Index] == nil {
				args[tc.Index] = &strings.Builder{}
			}
			args[tc.Index].WriteString(tc.Arguments)
		}
	}
	if restarts != 1 || len(args) != 1 || args[0] == nil || args[0].String() != call.Arguments {
		t.Fatalf("restarts %d, calls %d, arguments %v", restarts, len(args), args)
	}
	if before == "" || before == call.Arguments || json.Valid([]byte(before)) {
		t.Fatalf("the cut call had %q: the test needs arguments cut mid-JSON", before)
	}
}

// the caller reads the answer once, after two deltas marked Continued.
func TestChatStream_AContinuationCutInItsTurnIsContinuedAgain(t *testing.T) {
	answer := words("p", 60)
	primary := mocks.NewServer(mocks.WithScript(cutAt(answer, 20).Always()))
	defer primary.Close()
	second := mocks.NewServer(mocks.WithReply(answer), mocks.WithScript(cutAt(answer, 20).Always())) // 20 more words, then cut
	defer second.Close()
	third := mocks.NewServer(mocks.WithReply(answer))
	defer third.Close()
	c := newClient(t, openAIProvider("primary", primary, policy()), anthropicProvider("second", second, policy()),
		anthropicProvider("third", third, policy()), client.WithFallback("primary", "second", "third"))
	st, err := c.ChatStream(context.Background(), hello(), client.WithRescue(resilience.RescueContinue))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if r := readContinued(st); r.err != nil || r.text != answer || r.continues != 2 || st.Provider() != "third" {
		t.Fatalf("err %v, continued %d, by %s, text %q", r.err, r.continues, st.Provider(), r.text)
	}
	if _, text, _ := lastMessage(t, third); text != words("p", 40) {
		t.Fatalf("the third route was sent %q, want the 40 words delivered", text)
	}
	if acct := st.Accounting(); acct.FailedAttempts != 2 {
		t.Fatalf("accounting %+v, want both cut attempts", acct)
	}
}

// its Partial, and the route that could take a prefill is not asked.
func TestChatStream_AnAnswerThatReasonedIsNotContinued(t *testing.T) {
	answer := words("p", 60)
	primary := mocks.NewServer(mocks.WithScript(cutAt(answer, 10).Always()))
	defer primary.Close()
	deep := mocks.NewServer(mocks.WithReply(answer))
	defer deep.Close()
	c := newClient(t, anthropicProvider("claude", primary, policy()),
		compatibleProvider("deep", deep, policy(), openai.PrefillPrefix), client.WithFallback("claude", "deep"))
	req := hello()
	req.Reasoning = &providers.Reasoning{Effort: "low"}
	st, err := c.ChatStream(context.Background(), req, client.WithRescue(resilience.RescueContinue))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	reasoned := false
	var err2 error
	for d, err := range st.Deltas() {
		if err != nil {
			err2 = err
			break
		}
		reasoned = reasoned || d.Reasoning != ""
	}
	if !reasoned || err2 == nil || deep.Journal().Len() != 0 {
		t.Fatalf("reasoning streamed %v, err %v, the prefill route asked %d times", reasoned, err2, deep.Journal().Len())
	}
}

// cannot hold it is skipped, though it could hold the question alone.
func TestChatStream_AContinuationCountsTheAnswerItCarries(t *testing.T) {
	answer := words("p", 60)
	primary := mocks.NewServer(mocks.WithScript(cutAt(answer, 40).Always()))
	defer primary.Close()
	claude := mocks.NewServer(mocks.WithReply(answer))
	defer claude.Close()
	if _, r := continueToClaude(t, primary, claude, client.WithContextWindow("claude", client.EstimateTokens(hello())+5, nil)); partialOf(r.err) != words("p", 40) || claude.Journal().Len() != 0 {
		t.Fatalf("err %v, claude asked %d times", r.err, claude.Journal().Len())
	}
}
