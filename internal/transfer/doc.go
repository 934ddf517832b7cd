// Package transfer moves a prompt's KV cache from a prefill worker to a
// decode worker, and is where DESIGN I5 (complete handoff) is enforced.
//
// # Use
//
// The decode side runs a [Receiver]. For each request the gateway admitted,
// it reserves pages for exactly the admitted prompt length and registers them
// with [Receiver.Expect](id, nonce, promptTokens, sink), which returns a
// [*Pending]. [Pending.Await] returns nil only when every block of every page
// arrived with matching checksums and the completion record agrees on token
// count, model digest and KV layout; only then may the request become
// Decoding. Any other outcome is a typed error (errors.Is against the
// sentinels: [ErrChecksum], [ErrIncomplete], [ErrTokenCount],
// [ErrLayoutMismatch], [ErrDeadline], [ErrCanceled], [ErrAborted],
// [ErrConnLost], [ErrProtocol], [ErrClosed]) and the reservation has already
// been released through [PageSink.Drop], exactly once, with no write after it.
// [Pending.Cancel] aborts from the decode side.
//
// The prefill side holds a [Sender] per decode worker ([Dial] bootstraps the
// first connection, so a model or layout mismatch fails there with a
// [*MismatchError] naming the differing value). [Sender.Send] streams one
// request's KV from a [PageSource] as layers become ready, sends the
// completion record and waits for decode's ACK or NACK. The caller holds a
// lease on its prefill pages for the whole call and releases it when Send
// returns, on every path: ACK, NACK or error. Send never touches the source
// after returning, and pages under a lease never return to the free list
// (the SGLang 24527 / vLLM 21570 class of bug).
//
// [StoreSource] and [StoreSink] adapt a KV store with PageF16/PageF32 (the
// kvcache pool) plus a page table to the two interfaces.
//
// # Connections
//
// A connection carries one request at a time; a Sender keeps up to MaxIdle
// handshaken connections and dials more when requests overlap. Multiplexing
// would save sockets but puts every request behind the slowest sink on the
// connection, needs a credit protocol for backpressure, and makes a cut or
// corrupt stream fail requests that were not at fault. One request per
// connection gets backpressure from TCP flow control for free (the receiver
// reads a frame, stores it in the sink, then reads the next; a slow sink
// stops reads and the sender's writes block), bounds memory to fixed
// buffers (sender batch 256 KiB plus one frame of at most 1 MiB; receiver
// 16 KiB read buffer plus one frame), and confines a fault to its request.
// The handshake is per connection, not per request, because connections are
// reused after a clean ACK. After NACK, ABORT or any error the connection is
// closed. A pooled connection the decode worker has since closed (a restart)
// fails its next Send with ErrConnLost; callers retry as for any transfer
// failure.
//
// Decode's verdict is authoritative: if the ACK is lost after Await returned
// nil, prefill's Send reports ErrConnLost while decode proceeds with verified
// pages. Prefill treats every Send error the same way: release the lease,
// report failure; the gateway follows decode's outcome.
//
// Every stage has a deadline: dial and handshake (DialTimeout,
// HandshakeTimeout), each write and each silence inside a request
// (StallTimeout on both sides), the reservation as a whole
// (ReceiverConfig.TransferTimeout, from Expect), the verdict (AckTimeout),
// and the caller's context on Send and Await. Either side can abort: the
// other learns it from an ABORT frame, or from the connection closing when
// the abort interrupted a frame half-written, and ends in a terminal state.
//
// The [Transport] interface carries the byte stream, so RDMA or shared
// memory can replace TCP: [TCP] and the in-process [MemTransport]
// (net.Pipe) are provided, and [FaultTransport] wraps either to drop,
// corrupt, delay or cut frames in tests.
//
// # Wire format
//
// A connection is a sequence of frames. Every integer is little-endian.
// A frame is a 28-byte header followed by its payload:
//
//	offset size field
//	 0     2    magic "BK"
//	 2     1    protocol version (1)
//	 3     1    type: 1 HELLO, 2 BEGIN, 3 PAGE, 4 DONE, 5 ACK, 6 NACK, 7 ABORT
//	 4     8    request id (0 in HELLO)
//	12     4    page index, logical, from 0 (PAGE only, else 0)
//	16     2    first layer (PAGE only, else 0)
//	18     2    layer count, ≥ 1 (PAGE only, else 0)
//	20     4    payload length, at most 16 MiB (MaxPayload)
//	24     4    CRC32C (Castagnoli) of the payload followed by header bytes 0–23
//
// A decoder rejects a bad magic, an unknown type, a version other than its
// own outside HELLO, nonzero page fields outside PAGE, a PAGE with no layers,
// a length over the limit (before reading or allocating anything) and a
// checksum mismatch. Payloads by type:
//
//	HELLO  52 bytes: model digest [32] | page size u32 | KV dtype u32 (GGUF
//	       type: 0 F32, 1 F16) | layers u32 | KV dim u32 | max context u32
//	BEGIN  12 bytes: nonce u64 | prompt tokens u32
//	PAGE   for each layer in [first, first+count): the page's K rows then its
//	       V rows for its s valid slots, s×KVDim elements each, so
//	       count × 2 × s × KVDim × elemsize bytes; s = page size except on a
//	       partial last page. Slots past the prompt are never sent: they hold
//	       whatever the page's previous owner left.
//	DONE   64 + 4n bytes: nonce u64 | tokens u32 | page size u32 | KV dtype
//	       u32 | layers u32 | KV dim u32 | model digest [32] | n u32 |
//	       n page checksums u32
//	ACK    empty
//	NACK, ABORT  code u16 | UTF-8 message, at most 1024 bytes. Codes:
//	       1 layout mismatch, 2 checksum, 3 incomplete, 4 token count,
//	       5 unknown request, 6 deadline, 7 canceled, 8 protocol,
//	       9 connection lost, 10 closed, 11 duplicate; 0 other.
//
// A page's checksum is the CRC32C of the concatenated payload CRC32Cs (u32
// each) of that page's PAGE frames in the order sent; both sides compute it
// from the bytes they sent or received, so a payload corrupted behind a
// recomputed frame checksum still fails at DONE.
//
// # Exchange
//
// The sender opens with HELLO; the receiver always answers with its own
// HELLO, then closes if the version, digest, page size, dtype, layer count,
// KV dim or max context differ (both sides report a [*MismatchError] naming the first
// differing field). Per request the sender writes BEGIN, PAGE frames (each
// page's layers in increasing order; with every layer ready at once a frame
// carries as many layers of one page as fit in 1 MiB), and DONE; the
// receiver answers ACK when DONE verifies, NACK (with the reason) the moment
// anything fails, or ABORT when decode gives up; the sender sends ABORT when
// prefill gives up. The receiver refuses a BEGIN for an id it does not
// expect, a wrong nonce, a finished request, or a second stream for the same
// request, and any PAGE or DONE whose id is not the one its connection is
// streaming; such frames are counted ([Receiver.Rejected]) and never
// written. A BEGIN whose token count differs from the reservation fails the
// reservation before any page moves. At DONE the receiver checks, in order:
// nonce, digest and layout, token count equal to the reserved prompt length,
// page count, that every (page, layer) block arrived exactly once, and every
// page checksum.
package transfer
