// go.mod of the goapp test-data generator (standard library only, no dependencies).
module profd/testdata/goapp

go 1.19
