module example.com/graphileworkerlab

go 1.26.0

require github.com/outboxlab/outboxlab v0.0.0

require (
	github.com/Shopify/toxiproxy/v2 v2.12.0 // indirect
	github.com/jackc/pgpassfile v1.0.0 // indirect
	github.com/jackc/pgservicefile v0.0.0-20240606120523-5a60cdf6a761 // indirect
	github.com/jackc/pgx/v5 v5.12.0 // indirect
	golang.org/x/sys v0.31.0 // indirect
	golang.org/x/text v0.41.0 // indirect
	pgregory.net/rapid v1.3.0 // indirect
)

// The outboxlab repository this example lives in; a module of your own
// requires a released version instead.
replace github.com/outboxlab/outboxlab => ../..
