package mocks

import (
	"net/http"
	"strings"
)

// How a request's path maps to a wire dialect, an endpoint and a route name.

// endpoint is what a request asks for.
type endpoint int

const (
	chatEndpoint endpoint = iota + 1
	embeddingsEndpoint
	modelsEndpoint
	messagesEndpoint
	responsesEndpoint
	storedEndpoint // GET /v1/responses/{id}, POST /v1/responses/{id}/cancel (background.go)
	// conversationsEndpoint: POST /v1/conversations, GET and DELETE /v1/conversations/{id}
	// (conversations.go).
	conversationsEndpoint
	countEndpoint // POST /v1/messages/count_tokens (Anthropic)
)

// api is the wire dialect of a request.
type api int

const (
	openAI api = iota
	azure
	anthropic
)

// The routes a script can be given for itself (WithRouteScript, Server.RouteScript, "routes"
// in a scenario file), so that one server can fail one dialect or one endpoint while the
// others serve.
const (
	RouteChat            = "/v1/chat/completions"                              // OpenAI chat
	RouteEmbeddings      = "/v1/embeddings"                                    // OpenAI embeddings
	RouteMessages        = "/v1/messages"                                      // Anthropic messages
	RouteCountTokens     = "/v1/messages/count_tokens"                         // Anthropic token counting
	RouteAzureChat       = "/openai/deployments/{deployment}/chat/completions" // Azure chat, any deployment
	RouteAzureEmbeddings = "/openai/deployments/{deployment}/embeddings"       // Azure embeddings, any deployment
	RouteResponses       = "/v1/responses"                                     // OpenAI Responses
	RouteAzureResponses  = "/openai/v1/responses"                              // Azure Responses (the v1 API)
	// RouteStoredResponses is the read (GET) and the cancel (POST …/cancel) of a stored
	// background answer, and Azure's under RouteAzureStoredResponses. Only a script given for
	// the route itself answers them (the default sequence, scenarios and chaos do not): a step
	// with an error status, Reset, Stall or Malformed fails the read; any other serves it as
	// the fake's background runs stand, with the step's headers (RetryAfter included).
	RouteStoredResponses      = "/v1/responses/{id}"
	RouteAzureStoredResponses = "/openai/v1/responses/{id}"
)

// routeNames are the routes, in the order of Routes.
var routeNames = [...]string{RouteChat, RouteEmbeddings, RouteMessages, RouteAzureChat, RouteAzureEmbeddings,
	RouteResponses, RouteAzureResponses, RouteStoredResponses, RouteAzureStoredResponses, RouteCountTokens}

// numRoutes is how many routes there are.
const numRoutes = len(routeNames)

// Routes lists the route names a script, a latency profile or limits can be given for.
var Routes = routeNames[:]

// key is the route name of a request, one of Routes ("" for the others).
func (r routed) key() string {
	switch {
	case r.api == openAI && r.endpoint == chatEndpoint:
		return RouteChat
	case r.api == openAI && r.endpoint == embeddingsEndpoint:
		return RouteEmbeddings
	case r.api == anthropic && r.endpoint == messagesEndpoint:
		return RouteMessages
	case r.api == anthropic && r.endpoint == countEndpoint:
		return RouteCountTokens
	case r.api == azure && r.endpoint == chatEndpoint:
		return RouteAzureChat
	case r.api == azure && r.endpoint == embeddingsEndpoint:
		return RouteAzureEmbeddings
	case r.api == openAI && r.endpoint == responsesEndpoint:
		return RouteResponses
	case r.api == azure && r.endpoint == responsesEndpoint:
		return RouteAzureResponses
	case r.api == openAI && r.endpoint == storedEndpoint:
		return RouteStoredResponses
	case r.api == azure && r.endpoint == storedEndpoint:
		return RouteAzureStoredResponses
	}
	return ""
}

// routed is the result of route.
type routed struct {
	api        api
	endpoint   endpoint
	method     string
	deployment string
	stored     string // storedEndpoint: the response ID; conversationsEndpoint: the conversation's, "" to create one
	cancel     bool   // storedEndpoint: POST …/cancel
}

// route maps a request path to its dialect and endpoint. /v1/models answers in the Anthropic
// shape when the request carries anthropic-version.
func route(r *http.Request) (routed, bool) {
	p := strings.TrimSuffix(r.URL.Path, "/")
	switch p {
	case "/v1/chat/completions":
		return routed{api: openAI, endpoint: chatEndpoint, method: http.MethodPost}, true
	case "/v1/embeddings":
		return routed{api: openAI, endpoint: embeddingsEndpoint, method: http.MethodPost}, true
	case "/v1/models":
		if r.Header.Get("Anthropic-Version") != "" {
			return routed{api: anthropic, endpoint: modelsEndpoint, method: http.MethodGet}, true
		}
		return routed{api: openAI, endpoint: modelsEndpoint, method: http.MethodGet}, true
	case "/v1/messages":
		return routed{api: anthropic, endpoint: messagesEndpoint, method: http.MethodPost}, true
	case "/v1/messages/count_tokens":
		return routed{api: anthropic, endpoint: countEndpoint, method: http.MethodPost}, true
	case "/v1/responses":
		return routed{api: openAI, endpoint: responsesEndpoint, method: http.MethodPost}, true
	case "/openai/v1/responses":
		return routed{api: azure, endpoint: responsesEndpoint, method: http.MethodPost}, true
	}
	for _, base := range []struct {
		path string
		api  api
	}{{"/v1/conversations", openAI}, {"/openai/v1/conversations", azure}} {
		switch rest, ok := strings.CutPrefix(p, base.path); {
		case !ok:
		case rest == "":
			return routed{api: base.api, endpoint: conversationsEndpoint, method: http.MethodPost}, true
		case strings.HasPrefix(rest, "/") && len(rest) > 1 && !strings.Contains(rest[1:], "/"):
			method := http.MethodGet
			if r.Method == http.MethodDelete {
				method = http.MethodDelete
			}
			return routed{api: base.api, endpoint: conversationsEndpoint, method: method, stored: rest[1:]}, true
		}
	}
	for _, base := range []struct {
		prefix string
		api    api
	}{{"/v1/responses/", openAI}, {"/openai/v1/responses/", azure}} {
		if rest, ok := strings.CutPrefix(p, base.prefix); ok {
			id, cancel := strings.CutSuffix(rest, "/cancel")
			if id == "" || strings.Contains(id, "/") {
				return routed{api: base.api}, false
			}
			method := http.MethodGet
			if cancel {
				method = http.MethodPost
			}
			return routed{api: base.api, endpoint: storedEndpoint, method: method, stored: id, cancel: cancel}, true
		}
	}
	rest, ok := strings.CutPrefix(p, "/openai/deployments/")
	if !ok {
		return routed{api: openAI}, false
	}
	deployment, op, ok := strings.Cut(rest, "/")
	if !ok || deployment == "" {
		return routed{api: azure}, false
	}
	switch op {
	case "chat/completions":
		return routed{api: azure, endpoint: chatEndpoint, method: http.MethodPost, deployment: deployment}, true
	case "embeddings":
		return routed{api: azure, endpoint: embeddingsEndpoint, method: http.MethodPost, deployment: deployment}, true
	}
	return routed{api: azure}, false
}
