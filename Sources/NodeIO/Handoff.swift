import SFU

/// Datagrams one worker hands another, for connections whose transport lives on the other worker (a room
/// spread across cores). The producing worker writes into `batch` in place, as into its own socket batch;
/// its shell swaps in an empty batch when it hands a full one over, so the writers hold this object, never a
/// batch.
public final class Handoff: Egress {
    public enum Kind: Sendable {
        /// A room's packets for a connection whose transport another worker hosts, rewritten but still plain:
        /// that worker protects them with its own SRTP context and sends them.
        case send
        /// Datagrams a hosted transport received, still encrypted, for the worker whose room owns the connection
        /// (the room decrypts them: only the client's RTCP, a trickle next to the fan-out).
        case receive
    }

    /// The worker the datagrams go to.
    public let worker: Int
    public let kind: Kind
    /// Where the next datagrams are written; replaced by the shell at each handover.
    public var batch: DatagramBatch

    public init(worker: Int, kind: Kind, batch: DatagramBatch) {
        self.worker = worker
        self.kind = kind
        self.batch = batch
    }
}
