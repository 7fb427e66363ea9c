// Package hostile holds steady's tests against hostile and broken upstreams: servers that
// redirect to other origins, send bodies of gigabytes, gzip bombs, endless event-stream lines
// and comment floods, hints that would break a clock, 200 answers that are not answers, and
// error bodies that echo the API key. Each test drives the real client, providers and pipeline
// over loopback HTTP, for every provider kind, and states the rule it proves.
//
// The package has no code of its own; it exists for its tests.
package hostile
