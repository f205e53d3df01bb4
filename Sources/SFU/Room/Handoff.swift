/// Datagrams one worker hands another, for connections whose transport lives on the other worker (a room
/// spread across cores). The producing worker writes into `batch` in place, as into its own socket batch;
/// its shell swaps in an empty batch when it hands a full one over, so the writers hold this object, never a
/// batch.
public final class Handoff {
    public enum Kind: Sendable {
        /// Protected datagrams of a room's connection, for the worker that hosts its transport to send.
        case send
        /// Datagrams a hosted transport received, for the worker whose room owns the connection.
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
