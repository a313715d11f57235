// Package bench compares cadence's JSON repairer with
// github.com/kaptinlin/jsonrepair on the same broken inputs. It is a
// separate module so that the comparison's dependency stays out of the
// product's go.mod. Run it from this directory; jsonrepair takes up to a
// two minutes per 1 MiB input, so give it a single iteration:
//
//	go test -run '^$' -bench 'Compare/.*/.*/cadence'
//	go test -run '^$' -bench 'Compare/.*/.*/jsonrepair' -benchtime 1x -timeout 30m
package bench
