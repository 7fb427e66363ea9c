package mocks

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"time"
)

// openAIResponse answers a Responses request, as a response object or as the stream of its
// semantic events. The output holds, in order: a compaction item when the request asks for
// server-side compaction and its prompt reaches the threshold, a reasoning item when the
// request asks for reasoning (its summary when asked, its encrypted content when included), then the answer — a
// message of output_text (and a refusal part for a refusal) or a function call. Status
// "completed", or "incomplete" with incomplete_details.reason "max_output_tokens" for an
// answer cut at max_output_tokens and "content_filter" for ContentFilter.
func (c *call) openAIResponse(st Step) {
	text, cut := limitTokens(replyText(st, c.s.reply, c.lastUser), c.maxTokens)
	f, rc := c.feat, c.resp
	if f.schema != nil && st.Text == "" {
		text, cut = instanceJSON(f.schema), false
	}
	pieces, text := st.beforeRefusal(chunks(text))
	status, reason, completion := "completed", "", Tokens(text)+Tokens(st.Refuse)
	switch {
	case st.ContentFilter:
		status, reason = "incomplete", "content_filter"
	case cut && !st.refuses():
		status, reason = "incomplete", "max_output_tokens"
	}
	tc := st.ToolCall
	if tc == nil && f.forceTool != "" {
		tc = &ToolCall{Name: f.forceTool, Arguments: instanceJSON(f.toolSchema)}
	}
	if st.refuses() {
		tc = nil // the model refused instead of calling
	}
	respID, rsID, msgID, fcID := respIDs(c.seq)
	var compaction obj // the compaction item, nil when the prompt stays below the threshold
	if rc.compactAt > 0 && c.promptTokens >= rc.compactAt {
		compaction = obj{"type": "compaction", "id": fmt.Sprintf("cmp_fake%016d", c.seq),
			"encrypted_content": encryptedPrefix + base64.StdEncoding.EncodeToString([]byte(fmt.Sprintf("compacted by call %d", c.seq)))}
	}
	var reasoning obj // the reasoning item, nil when none was asked for
	var think string
	reasoningTokens, cachedTokens := 0, 0
	if f.thinking {
		var sig string
		think, sig = thought(c.lastUser, c.seq)
		reasoningTokens = Tokens(think)
		completion += reasoningTokens
		reasoning = obj{"type": "reasoning", "id": rsID, "summary": []obj{}}
		if rc.summary {
			reasoning["summary"] = []obj{{"type": "summary_text", "text": think}}
		}
		if rc.encrypted {
			reasoning["encrypted_content"] = encryptedPrefix + base64.StdEncoding.EncodeToString([]byte(sig))
		}
	}
	var answer obj // the message or the function call
	if tc != nil {
		text, pieces, completion = "", nil, Tokens(tc.Name+toolArgs(tc))+reasoningTokens
		answer = obj{"type": "function_call", "id": fcID, "call_id": toolID(tc, "call_", c.seq), "name": tc.Name,
			"arguments": toolArgs(tc), "status": "completed"}
	} else {
		content := []obj{}
		if text != "" || st.Refuse == "" {
			content = append(content, obj{"type": "output_text", "text": text, "annotations": []obj{}, "logprobs": []obj{}})
		}
		if st.Refuse != "" {
			content = append(content, obj{"type": "refusal", "refusal": st.Refuse})
		}
		answer = obj{"type": "message", "id": msgID, "status": "completed", "role": "assistant", "content": content}
	}
	if c.promptTokens >= 1024 && c.s.cached(f.prefix) {
		cachedTokens = c.promptTokens / 128 * 128
	}
	usage := obj{"input_tokens": c.promptTokens, "input_tokens_details": obj{"cached_tokens": cachedTokens},
		"output_tokens": completion, "output_tokens_details": obj{"reasoning_tokens": reasoningTokens},
		"total_tokens": c.promptTokens + completion}
	output := make([]obj, 0, 3)
	for _, it := range []obj{compaction, reasoning, answer} {
		if it != nil {
			output = append(output, it)
		}
	}
	if rc.store {
		c.s.responses.add(respID, rsID)
	}
	if rc.conversation != "" {
		c.s.conversations.record(rc.conversation, rc.input, message{Role: "assistant", Content: jsonText(text)})
	}
	response := func(status string, output []obj, usage any) obj {
		r := obj{"id": respID, "object": "response", "created_at": time.Now().Unix(), "status": status,
			"error": nil, "incomplete_details": nil, "model": c.model, "output": output, "usage": usage,
			"parallel_tool_calls": true, "tool_choice": "auto", "tools": []obj{}, "store": rc.store,
			"text": obj{"format": obj{"type": "text"}}, "temperature": 1.0, "top_p": 1.0,
			"previous_response_id": nil, "reasoning": obj{"effort": nil, "summary": nil}}
		if rc.previous != "" {
			r["previous_response_id"] = rc.previous
		}
		if rc.conversation != "" {
			r["conversation"] = obj{"id": rc.conversation}
		}
		if reason != "" && status == "incomplete" {
			r["incomplete_details"] = obj{"reason": reason}
		}
		return r
	}
	if rc.background && !c.stream {
		final := response(status, output, usage)
		final["background"] = true
		queued := response("queued", []obj{}, nil)
		queued["background"] = true
		c.s.background.add(respID, final)
		if st.Expire {
			defer c.s.forget(respID) // also when the reply is cut (a panic that drops the connection)
		}
		c.sendJSON(st, queued)
		return
	}
	if !c.stream {
		c.sendJSON(st, response(status, output, usage))
		return
	}
	e := &respEvents{}
	if rc.background {
		// Generated whole first and stored, so that a read with starting_after can serve the
		// rest of the stream however this one ends.
		e.rec = &[]recEvent{}
	} else {
		e.sw = c.startStream(st)
	}
	stream := func() bool {
		if !e.open("response.created", obj{"response": response("in_progress", []obj{}, nil)}) ||
			!e.open("response.in_progress", obj{"response": response("in_progress", []obj{}, nil)}) {
			return false
		}
		at := 0
		if compaction != nil {
			if !e.compactionItem(at, compaction) {
				return false
			}
			at++
		}
		if reasoning != nil {
			if !e.reasoningItem(at, reasoning, rc.summary, think) {
				return false
			}
			at++
			e.opened = true // what follows the reasoning's deltas is no preamble
		}
		if tc != nil {
			return e.functionCall(at, answer, toolArgs(tc))
		}
		return e.message(at, answer, pieces, text, st.Refuse)
	}
	if !stream() {
		return
	}
	e.send("response."+status, obj{"response": response(status, output, usage)})
	if e.rec != nil {
		final := response(status, output, usage)
		final["background"] = true
		c.s.background.addStream(respID, final, *e.rec)
		if st.Expire {
			defer c.s.forget(respID) // before the connection drops, when the stream is cut
		}
		replay(c.startStream(st), *e.rec, -1)
	}
}

// respEvents writes the events of a Responses stream, each with its type and sequence number,
// through the step's sseWriter: before any content they are its preamble, the deltas its
// content, the rest other events.
type respEvents struct {
	sw     *sseWriter
	rec    *[]recEvent // instead of sw: the events are recorded (background mode), never cut
	opened bool        // content came: later item openings are no preamble
}

// recEvent is a recorded event of a background stream: where it stands, its name and data.
type recEvent struct {
	kind eventKind
	name string
	data obj
}

func (e *respEvents) event(kind eventKind, name string, data obj) bool {
	if kind == preambleEvent && e.opened {
		kind = otherEvent
	}
	data["type"] = name
	if e.rec != nil {
		data["sequence_number"] = len(*e.rec)
		*e.rec = append(*e.rec, recEvent{kind, name, data})
		return true
	}
	data["sequence_number"] = e.sw.sent
	return write(e.sw, kind, name, data)
}

// write writes one event of kind through sw; false when the stream must end here.
func write(sw *sseWriter, kind eventKind, name string, data obj) bool {
	switch kind {
	case preambleEvent:
		return sw.open(name, data)
	case contentEvent:
		return sw.delta(name, data)
	}
	return sw.send(name, data)
}

// replay writes the recorded events after sequence number after through sw, until one must
// end the stream (the step's faults apply as to any stream).
func replay(sw *sseWriter, events []recEvent, after int) {
	for i := after + 1; i < len(events); i++ {
		if !write(sw, events[i].kind, events[i].name, events[i].data) {
			return
		}
	}
}

func (e *respEvents) open(name string, data obj) bool  { return e.event(preambleEvent, name, data) }
func (e *respEvents) delta(name string, data obj) bool { return e.event(contentEvent, name, data) }
func (e *respEvents) send(name string, data obj) bool  { return e.event(otherEvent, name, data) }

// compactionItem streams the compaction item at output index at: added (without its encrypted
// content), done (whole).
func (e *respEvents) compactionItem(at int, item obj) bool {
	return e.open("response.output_item.added", obj{"output_index": at, "item": obj{"type": "compaction", "id": item["id"]}}) &&
		e.open("response.output_item.done", obj{"output_index": at, "item": item})
}

// reasoningItem streams the reasoning item at output index at: added (without its encrypted
// content, as the API sends it), its summary's deltas when it has one, done (whole).
func (e *respEvents) reasoningItem(at int, item obj, summary bool, text string) bool {
	added := obj{"type": "reasoning", "id": item["id"], "summary": []obj{}}
	if !e.open("response.output_item.added", obj{"output_index": at, "item": added}) {
		return false
	}
	if summary {
		ref := obj{"item_id": item["id"], "output_index": at, "summary_index": 0}
		with := func(k string, v any) obj {
			o := obj{k: v}
			for key, val := range ref {
				o[key] = val
			}
			return o
		}
		if !e.open("response.reasoning_summary_part.added", with("part", obj{"type": "summary_text", "text": ""})) {
			return false
		}
		for _, part := range chunks(text) {
			if !e.delta("response.reasoning_summary_text.delta", with("delta", part)) {
				return false
			}
		}
		if !e.send("response.reasoning_summary_text.done", with("text", text)) ||
			!e.send("response.reasoning_summary_part.done", with("part", obj{"type": "summary_text", "text": text})) {
			return false
		}
	}
	return e.send("response.output_item.done", obj{"output_index": at, "item": item})
}

// functionCall streams a function call at output index at: added (arguments empty), the
// arguments' deltas, their done event, the item's done.
func (e *respEvents) functionCall(at int, item obj, args string) bool {
	added := obj{}
	for k, v := range item {
		added[k] = v
	}
	added["arguments"], added["status"] = "", "in_progress"
	if !e.open("response.output_item.added", obj{"output_index": at, "item": added}) {
		return false
	}
	for _, part := range argChunks(args) {
		if !e.delta("response.function_call_arguments.delta", obj{"item_id": item["id"], "output_index": at, "delta": part}) {
			return false
		}
	}
	return e.send("response.function_call_arguments.done", obj{"item_id": item["id"], "output_index": at, "arguments": args}) &&
		e.send("response.output_item.done", obj{"output_index": at, "item": item})
}

// message streams a message at output index at: added, the output_text part with its deltas,
// the refusal part with its deltas when it refuses, the item's done.
func (e *respEvents) message(at int, item obj, pieces []string, text, refusal string) bool {
	id := item["id"]
	added := obj{"type": "message", "id": id, "status": "in_progress", "role": "assistant", "content": []obj{}}
	if !e.open("response.output_item.added", obj{"output_index": at, "item": added}) {
		return false
	}
	part := func(index int, kind string, p obj) obj {
		return obj{"item_id": id, "output_index": at, "content_index": index, kind: p}
	}
	index := 0
	if text != "" || refusal == "" {
		if !e.open("response.content_part.added", part(0, "part", obj{"type": "output_text", "text": "", "annotations": []obj{}})) {
			return false
		}
		for _, p := range pieces {
			if !e.delta("response.output_text.delta", obj{"item_id": id, "output_index": at, "content_index": 0, "delta": p, "logprobs": []obj{}}) {
				return false
			}
		}
		if !e.send("response.output_text.done", obj{"item_id": id, "output_index": at, "content_index": 0, "text": text, "logprobs": []obj{}}) ||
			!e.send("response.content_part.done", part(0, "part", obj{"type": "output_text", "text": text, "annotations": []obj{}})) {
			return false
		}
		index = 1
	}
	if refusal != "" {
		if !e.send("response.content_part.added", part(index, "part", obj{"type": "refusal", "refusal": ""})) {
			return false
		}
		for _, p := range chunks(refusal) {
			if !e.delta("response.refusal.delta", obj{"item_id": id, "output_index": at, "content_index": index, "delta": p}) {
				return false
			}
		}
		if !e.send("response.refusal.done", obj{"item_id": id, "output_index": at, "content_index": index, "refusal": refusal}) ||
			!e.send("response.content_part.done", part(index, "part", obj{"type": "refusal", "refusal": refusal})) {
			return false
		}
	}
	return e.send("response.output_item.done", obj{"output_index": at, "item": item})
}

// respStreamError is the data of a Responses stream's error event for st.
func respStreamError(st Step, seq int) obj {
	msg := st.Message
	if msg == "" {
		msg = fmt.Sprintf("The server had an error while processing your request (%s).", st.StreamError)
	}
	return obj{"type": "error", "code": st.StreamError, "message": msg, "param": nil, "sequence_number": seq}
}

// jsonText is text as a JSON string.
func jsonText(text string) json.RawMessage {
	b, _ := json.Marshal(text)
	return b
}
