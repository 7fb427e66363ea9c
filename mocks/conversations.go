package mocks

import (
	"encoding/json"
	"fmt"
	"net/http"
	"sync"
	"time"
)

// OpenAI's Conversations API, as far as a Responses call uses it: POST /v1/conversations
// creates a conversation ({"id":"conv_…","object":"conversation",…}), GET /v1/conversations/{id}
// reads it, DELETE deletes it (Azure: under /openai/v1/). A Responses request that names it
// (conversation: its ID, or {"id": …}) gets its items before its own input — they count in
// its prompt — and adds its input and answer to it. An unknown conversation is a 404 naming
// the param; conversation with previous_response_id is a 400. [Server.Forget] deletes one.

// conversations holds the conversations; past storedCapacity the oldest is forgotten, and each
// keeps its last maxConversationItems messages, so a long run holds bounded memory.
type conversations struct {
	mu    sync.Mutex
	convs map[string][]message
	order []string
	next  int
}

const maxConversationItems = 256

// create makes the conversation id.
func (cs *conversations) create(id string) {
	cs.mu.Lock()
	defer cs.mu.Unlock()
	if cs.convs == nil {
		cs.convs = map[string][]message{}
	}
	if _, ok := cs.convs[id]; ok {
		return
	}
	if len(cs.order) == storedCapacity {
		delete(cs.convs, cs.order[cs.next])
		cs.order[cs.next] = id
		cs.next = (cs.next + 1) % storedCapacity
	} else {
		cs.order = append(cs.order, id)
	}
	cs.convs[id] = []message{}
}

// has reports whether the conversation id exists.
func (cs *conversations) has(id string) bool {
	cs.mu.Lock()
	defer cs.mu.Unlock()
	_, ok := cs.convs[id]
	return ok
}

// items returns a copy of the conversation's messages.
func (cs *conversations) items(id string) []message {
	cs.mu.Lock()
	defer cs.mu.Unlock()
	return append([]message(nil), cs.convs[id]...)
}

// record adds a call's input and its answer to the conversation id, keeping its last
// maxConversationItems messages.
func (cs *conversations) record(id string, input []message, answer message) {
	cs.mu.Lock()
	defer cs.mu.Unlock()
	msgs, ok := cs.convs[id]
	if !ok {
		return
	}
	msgs = append(append(msgs, input...), answer)
	if n := len(msgs) - maxConversationItems; n > 0 {
		msgs = append([]message(nil), msgs[n:]...)
	}
	cs.convs[id] = msgs
}

// forget deletes the conversation id, reporting whether it existed.
func (cs *conversations) forget(id string) bool {
	cs.mu.Lock()
	defer cs.mu.Unlock()
	if _, ok := cs.convs[id]; !ok {
		return false
	}
	delete(cs.convs, id)
	return true
}

// conversationParam reads a Responses request's conversation (absent, an ID, or {"id": …}):
// the ID of a conversation the server holds, "" for none.
func (c *call) conversationParam(raw json.RawMessage, withPrevious bool) (string, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return "", nil
	}
	if withPrevious {
		return "", invalidParam("conversation", "Mutually exclusive parameters: Ensure you are only providing one of: 'previous_response_id' or 'conversation'.")
	}
	var id string
	if json.Unmarshal(raw, &id) != nil {
		var o struct {
			ID string `json:"id"`
		}
		if json.Unmarshal(raw, &o) != nil || o.ID == "" {
			return "", invalidParam("conversation", "Invalid type for 'conversation': expected a string or an object with an 'id'.")
		}
		id = o.ID
	}
	if !c.s.conversations.has(id) {
		return "", &notFoundError{param: "conversation", msg: fmt.Sprintf("Conversation with id '%s' not found.", clip(id, 128))}
	}
	return id, nil
}

// serveConversation answers a call of the Conversations API; it returns the journal's note.
func (c *call) serveConversation(rt routed, body []byte) string {
	c.headers(Step{})
	conv := func(id string) obj {
		return obj{"id": id, "object": "conversation", "created_at": time.Now().Unix(), "metadata": obj{}}
	}
	switch {
	case rt.stored == "":
		var req map[string]json.RawMessage
		if len(body) > 0 && json.Unmarshal(body, &req) != nil {
			c.writeErrorParam(Step{Status: http.StatusBadRequest, Message: "We could not parse the JSON body of your request."}, "")
			return "400 body"
		}
		id := fmt.Sprintf("conv_fake%016d", c.seq)
		c.s.conversations.create(id)
		c.writeJSON(http.StatusOK, conv(id))
		return "200 created " + id
	case !c.s.conversations.has(rt.stored):
		c.writeErrorParam(Step{Status: http.StatusNotFound, Message: fmt.Sprintf("Conversation with id '%s' not found.", clip(rt.stored, 128))}, "conversation_id")
		return "404 conversation_id"
	case rt.method == http.MethodDelete:
		c.s.conversations.forget(rt.stored)
		c.writeJSON(http.StatusOK, obj{"id": rt.stored, "object": "conversation.deleted", "deleted": true})
		return "200 deleted"
	}
	c.writeJSON(http.StatusOK, conv(rt.stored))
	return "200 conversation"
}
