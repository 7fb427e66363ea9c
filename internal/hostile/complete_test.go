package hostile_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"testing"
	"time"

	"github.com/steadyllm/steady/providers"
)

// finishedThenSilent is a server whose stream sends its text, its finish reason and its
// usage, and then neither its terminal event nor anything else until the client leaves.
func finishedThenSilent(t *testing.T, k kind) string {
	t.Helper()
	return server(t, func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "text/event-stream")
		switch {
		case k.isResponses(): // the terminal event carries the finish and the usage
			fmt.Fprint(w, respContent+"event: response.completed\ndata: {\"type\":\"response.completed\",\"response\":{\"id\":\"r\",\"object\":\"response\",\"status\":\"completed\",\"usage\":{\"input_tokens\":4,\"output_tokens\":2}}}\n\n")
		case k.isAnthropic():
			fmt.Fprint(w, "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"m\",\"type\":\"message\",\"role\":\"assistant\",\"content\":[],\"usage\":{\"input_tokens\":4,\"output_tokens\":1}}}\n\n"+
				"event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"hi\"}}\n\n"+
				"event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"end_turn\"},\"usage\":{\"output_tokens\":2}}\n\n")
		default:
			fmt.Fprint(w, "data: {\"id\":\"c\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"hi\"},\"finish_reason\":null}]}\n\n"+
				"data: {\"id\":\"c\",\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}]}\n\n"+
				"data: {\"id\":\"c\",\"choices\":[],\"usage\":{\"prompt_tokens\":4,\"completion_tokens\":2,\"total_tokens\":6}}\n\n")
		}
		w.(http.Flusher).Flush()
		<-r.Context().Done()
	}).URL
}

// Complete means complete: a stream whose finish reason came is the whole answer, also when
// its terminal event never comes and the pipeline's stream-idle timeout ends the wait for it.
// The caller gets the Done delta, with the usage, not a timeout.
func TestStreams_SilenceAfterTheFinishReasonIsComplete(t *testing.T) {
	for _, k := range kinds {
		c := newClient(t, k, finishedThenSilent(t, k), timeoutPolicy(10, 0.3), providers.Limits{})
		st, err := c.ChatStream(context.Background(), ask())
		if err != nil {
			t.Fatalf("%s: %v", k.name, err)
		}
		var deltas []providers.Delta
		within(t, 5*time.Second, k.name+" stream", func() {
			for d, err := range st.Deltas() {
				if err != nil {
					t.Errorf("%s: %v", k.name, err)
					return
				}
				deltas = append(deltas, d)
			}
		})
		st.Close()
		if len(deltas) != 2 || deltas[0].Text != "hi" || !deltas[1].Done || deltas[1].FinishReason != providers.FinishStop ||
			deltas[1].Usage != (providers.Usage{InputTokens: 4, OutputTokens: 2}) {
			t.Errorf("%s: deltas %+v", k.name, deltas)
		}
	}
}
