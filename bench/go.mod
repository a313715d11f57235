module github.com/cadence-dev/cadence/bench

go 1.26.8

replace github.com/cadence-dev/cadence => ../

require (
	github.com/cadence-dev/cadence v0.0.0-00010101000000-000000000000
	github.com/kaptinlin/jsonrepair v0.2.15
)

require github.com/go-json-experiment/json v0.0.0-20251027170946-4849db3c2f7e // indirect
