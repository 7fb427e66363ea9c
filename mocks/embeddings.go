package mocks

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
)

// The OpenAI embeddings endpoint (also Azure's), and the models list of both dialects.

// parseEmbeddings reads an embeddings request.
func (c *call) parseEmbeddings(body []byte) error {
	var req struct {
		Model          string          `json:"model"`
		Input          json.RawMessage `json:"input"`
		Dimensions     int             `json:"dimensions"`
		EncodingFormat string          `json:"encoding_format"`
	}
	if err := json.Unmarshal(body, &req); err != nil {
		return fmt.Errorf("We could not parse the JSON body of your request: %v", err)
	}
	if c.deployment != "" {
		req.Model = c.deployment
	}
	if req.Model == "" {
		return errors.New("you must provide a model parameter")
	}
	var one string
	var many []string
	switch {
	case json.Unmarshal(req.Input, &one) == nil:
		c.inputs = []string{one}
	case json.Unmarshal(req.Input, &many) == nil && len(many) > 0:
		c.inputs = many
	case len(req.Input) > 2 && req.Input[0] == '[':
		c.inputs = []string{string(req.Input)} // token arrays: embed their JSON text
	default:
		return errors.New("'input' is a required property")
	}
	if req.Dimensions < 0 || req.Dimensions > 4096 {
		return fmt.Errorf("invalid 'dimensions': %d", req.Dimensions)
	}
	c.model, c.dims, c.base64 = req.Model, req.Dimensions, req.EncodingFormat == "base64"
	if c.dims == 0 {
		c.dims = 8
	}
	// The reply holds inputs × dimensions numbers: bound both, or a request of a few
	// kilobytes could ask for a reply of gigabytes.
	if n := len(c.inputs); n > MaxEmbeddingInputs {
		return invalidParam("input", fmt.Sprintf("Invalid 'input': array too long. Expected an array with maximum length %d, but got an array with length %d instead.", MaxEmbeddingInputs, n))
	}
	if n := len(c.inputs) * c.dims; n > MaxEmbeddingValues {
		return invalidParam("dimensions", fmt.Sprintf("Invalid 'dimensions': %d inputs of %d dimensions are %d values; this fake server answers at most %d per request.", len(c.inputs), c.dims, n, MaxEmbeddingValues))
	}
	for _, in := range c.inputs {
		c.promptTokens += c.s.countPrompt(in)
	}
	return nil
}

// embeddingsBody builds the embeddings reply: a deterministic unit vector per input.
func (c *call) embeddingsBody() obj {
	data := make([]obj, len(c.inputs))
	for i, in := range c.inputs {
		v := embedding(in, c.dims)
		var enc any = v
		if c.base64 {
			enc = base64.StdEncoding.EncodeToString(float32LE(v))
		}
		data[i] = obj{"object": "embedding", "index": i, "embedding": enc}
	}
	return obj{"object": "list", "data": data, "model": c.model,
		"usage": obj{"prompt_tokens": c.promptTokens, "total_tokens": c.promptTokens}}
}

// modelsBody lists the server's models in the call's dialect.
func (c *call) modelsBody() obj {
	data := make([]obj, len(c.s.models))
	for i, id := range c.s.models {
		if c.api == anthropic {
			data[i] = obj{"type": "model", "id": id, "display_name": id, "created_at": "2025-01-01T00:00:00Z"}
		} else {
			data[i] = obj{"id": id, "object": "model", "created": 1735689600, "owned_by": "fakellm"}
		}
	}
	if c.api != anthropic {
		return obj{"object": "list", "data": data}
	}
	first, last := "", ""
	if len(c.s.models) > 0 {
		first, last = c.s.models[0], c.s.models[len(c.s.models)-1]
	}
	return obj{"data": data, "has_more": false, "first_id": first, "last_id": last}
}
