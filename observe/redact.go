package observe

import "github.com/steadyllm/steady/internal/redact"

// maxErrorText bounds the error text put in a log record or a span status.
const maxErrorText = 300

// safeText returns an error's text fit for logs and traces. The pipeline's and the providers'
// errors already name no URL and no key; this is the second line of defence, for errors from
// elsewhere (a custom transport or provider): URLs shrink to scheme://host, credentials that
// look like credentials become [REDACTED], control characters become spaces, and the text is
// cut to a few hundred bytes.
func safeText(err error) string {
	if err == nil {
		return ""
	}
	return redact.New().Text(err.Error(), maxErrorText)
}
