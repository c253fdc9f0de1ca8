// go.mod of the labelapp test-data generator (standard library only, no dependencies).
module profd/testdata/labelapp

go 1.19
