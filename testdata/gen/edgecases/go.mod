// go.mod of the edgecases test-data generator (standard library only, no dependencies).
module profd/testdata/edgecases

go 1.19
