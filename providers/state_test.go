package providers_test

import (
	"errors"
	"fmt"
	"testing"

	"github.com/steadyllm/steady/providers"
)

// The gone codes match their sentinels, through wrapping too, and nothing else does.
func TestGone_MatchesItsCodesOnly(t *testing.T) {
	for _, c := range []struct {
		code         string
		resp, conv   bool
		prefillMatch bool
	}{
		{providers.CodeResponseGone, true, false, false},
		{providers.CodeConversationGone, false, true, false},
		{providers.CodePrefillUnsupported, false, false, true},
		{"not_found", false, false, false},
		{"", false, false, false},
	} {
		err := fmt.Errorf("wrapped: %w", &providers.Error{Kind: providers.KindNotFound, Code: c.code})
		if errors.Is(err, providers.ErrResponseGone) != c.resp || errors.Is(err, providers.ErrConversationGone) != c.conv ||
			providers.Gone(err) != (c.resp || c.conv) || errors.Is(err, providers.ErrPrefillUnsupported) != c.prefillMatch {
			t.Errorf("code %q", c.code)
		}
	}
	if providers.Gone(nil) || providers.Gone(errors.New("response_gone")) {
		t.Error("Gone matched what is not a gone error")
	}
}
