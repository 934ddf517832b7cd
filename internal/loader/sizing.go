package loader

import (
	"bufio"
	"fmt"
	"os"
	"strconv"
	"strings"

	"github.com/bulkhead-llm/bulkhead/internal/engine"
	"github.com/bulkhead-llm/bulkhead/internal/gguf"
	"github.com/bulkhead-llm/bulkhead/internal/kvcache"
)

// PoolOptions size the KV pool. At most one of KVTokens and KVMemory is set;
// with neither, the pool takes DefaultMemoryShare of the memory the kernel
// reports available, capped at what DefaultMaxSequences sequences of the
// maximum context need.
type PoolOptions struct {
	MaxContext int   // 0 means the model's training context
	KVTokens   int   // pool capacity in tokens
	KVMemory   int64 // pool memory budget in bytes
	PageSize   int   // 0 means kvcache.DefaultPageSize
	F32        bool  // F32 KV instead of F16
	Poison     bool  // debug: NaN-fill freed pages
}

// Defaults for the pool size when neither KVTokens nor KVMemory is given.
const (
	DefaultMemoryShare   = 0.25
	DefaultMaxSequences  = 64
	minDefaultPoolTokens = 4096
)

// Validate names the first bad field.
func (o PoolOptions) Validate() error {
	switch {
	case o.MaxContext < 0:
		return fmt.Errorf("--max-context %d must not be negative", o.MaxContext)
	case o.KVTokens < 0:
		return fmt.Errorf("--kv-tokens %d must not be negative", o.KVTokens)
	case o.KVMemory < 0:
		return fmt.Errorf("--kv-memory %d must not be negative", o.KVMemory)
	case o.KVTokens > 0 && o.KVMemory > 0:
		return fmt.Errorf("set --kv-tokens or --kv-memory, not both")
	case o.PageSize < 0 || o.PageSize > kvcache.MaxPageSize:
		return fmt.Errorf("--page-size %d out of range [1, %d]", o.PageSize, kvcache.MaxPageSize)
	}
	return nil
}

// MaxContextFor resolves the configured maximum context.
func (m *Model) MaxContextFor(o PoolOptions) int {
	if o.MaxContext > 0 {
		return o.MaxContext
	}
	return m.Model.Config.Context
}

// PoolConfig turns options into a kvcache configuration for this model.
func (m *Model) PoolConfig(o PoolOptions) (kvcache.Config, error) {
	if err := o.Validate(); err != nil {
		return kvcache.Config{}, err
	}
	c := m.Model.Config
	cfg := kvcache.Config{PageSize: o.PageSize, DType: gguf.F16, Layers: c.Layers, KVDim: c.KVDim(),
		Tokens: o.KVTokens, MemoryBytes: o.KVMemory, PoisonFreed: o.Poison}
	if o.F32 {
		cfg.DType = gguf.F32
	}
	if cfg.Tokens == 0 && cfg.MemoryBytes == 0 {
		want := int64(DefaultMaxSequences) * int64(max(m.MaxContextFor(o), minDefaultPoolTokens/DefaultMaxSequences))
		budget := int64(float64(availableMemory()) * DefaultMemoryShare)
		if tb := cfg.TokenBytes(); budget/tb < want {
			cfg.MemoryBytes = budget
		} else {
			cfg.Tokens = int(want)
		}
	}
	return cfg, cfg.Validate()
}

// NewEngine builds the KV pool and the engine. It fails with a message
// naming both numbers when the pool cannot hold the maximum context (I3).
func (m *Model) NewEngine(o PoolOptions, ec engine.Config) (*engine.Engine, error) {
	pc, err := m.PoolConfig(o)
	if err != nil {
		return nil, err
	}
	pool, err := kvcache.New(pc)
	if err != nil {
		return nil, err
	}
	ec.MaxContext = m.MaxContextFor(o)
	ec.VocabSize = m.Model.Config.Vocab
	ec.EOG = m.EOG()
	return engine.New(ec, m.Model, pool)
}

// availableMemory reads MemAvailable from /proc/meminfo, falling back to
// 4 GiB where it cannot be read.
func availableMemory() int64 {
	const fallback = 4 << 30
	f, err := os.Open("/proc/meminfo")
	if err != nil {
		return fallback
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) >= 2 && fields[0] == "MemAvailable:" {
			kb, err := strconv.ParseInt(fields[1], 10, 64)
			if err == nil {
				return kb << 10
			}
		}
	}
	return fallback
}
