module github.com/payidem/payidem/bindings/go

go 1.22
