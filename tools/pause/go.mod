// The test cluster's pod sandbox process (main.go); no dependencies.
module agentkourier.invalid/tools/pause

go 1.24.0
