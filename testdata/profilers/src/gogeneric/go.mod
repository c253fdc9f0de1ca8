module example.com/gogeneric

go 1.19
