package interop

import (
	"context"
	"testing"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/azure"
	"github.com/openai/openai-go/v3/option"

	"github.com/steadyllm/steady/mocks"
)

func TestAzure_DeploymentPathAndAPIKey(t *testing.T) {
	s := newServer(t, mocks.WithAPIKey("azure-key"))
	c := openai.NewClient(
		azure.WithEndpoint(s.URL(), "2024-10-21"),
		azure.WithAPIKey("azure-key"),
		azure.WithUnsafeAllowHTTP(), // the fake is plain HTTP on loopback
		option.WithHTTPClient(s.Client()),
		option.WithMaxRetries(0),
	)
	resp, err := c.Chat.Completions.New(context.Background(), openai.ChatCompletionNewParams{
		Model:    "my-deployment",
		Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("Hello Azure")},
	})
	if err != nil {
		t.Fatal(err)
	}
	if resp.Choices[0].Message.Content != "Hello Azure" || resp.Model != "my-deployment" {
		t.Errorf("content %q model %q", resp.Choices[0].Message.Content, resp.Model)
	}
	r, _ := s.Journal().Last()
	if r.Path != "/openai/deployments/my-deployment/chat/completions" || r.Query != "api-version=2024-10-21" || r.Header.Get("Api-Key") != "REDACTED" {
		t.Errorf("request %s?%s api-key %q", r.Path, r.Query, r.Header.Get("Api-Key"))
	}
}
