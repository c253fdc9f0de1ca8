// The demo program of `make demo` and `make run`: standard library only.
module profd/examples/demo-go

go 1.19
