package main

import (
	"flag"
	"io"
	"testing"

	"github.com/steadyllm/steady/mocks"
)

// A concurrency flag replaces only what it names: the scenario file's server-wide limit and
// its other routes' limits stay, as the JSON route flags add to the file's routes.
func TestSettings_ConcurrencyFlagsKeepTheFilesOtherLimits(t *testing.T) {
	file, err := mocks.ParseConfig([]byte(`{"concurrency": {"max": 8, "routes": {"/v1/chat/completions": 3}}}`))
	if err != nil {
		t.Fatal(err)
	}
	var st settings
	fs := flag.NewFlagSet("fakellm", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	st.flags(fs)
	if err := fs.Parse([]string{"-route-concurrency", "/v1/messages=2"}); err != nil {
		t.Fatal(err)
	}
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	opts, err := st.options(set, file)
	if err != nil {
		t.Fatal(err)
	}
	s := mocks.NewServer(append([]mocks.Option{mocks.WithConfig(file)}, opts...)...)
	defer s.Close()
	c := s.Concurrency()
	if c.Max != 8 || c.Routes["/v1/chat/completions"].Max != 3 || c.Routes["/v1/messages"].Max != 2 {
		t.Errorf("limits %+v, want the file's max 8 and chat 3 with the flag's messages 2", c)
	}
}
