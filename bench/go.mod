module github.com/steadyllm/steady/bench

go 1.23.0

replace github.com/steadyllm/steady => ../

require (
	github.com/failsafe-go/failsafe-go v0.9.8
	github.com/steadyllm/steady v0.0.0-00010101000000-000000000000
)

require (
	github.com/bits-and-blooms/bitset v1.24.4 // indirect
	github.com/hashicorp/go-cleanhttp v0.5.2 // indirect
	github.com/hashicorp/go-retryablehttp v0.7.8 // indirect
	github.com/influxdata/tdigest v0.0.1 // indirect
)
