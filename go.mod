module github.com/bulkhead-llm/bulkhead

go 1.26
