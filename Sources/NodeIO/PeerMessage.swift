import SFU
import WebRTCEdge

/// What one worker core tells another about a transport that lives on one worker (its host: ICE, DTLS, the
/// socket) for a room on the other (its home: the session, SRTP, everything media). Media itself goes
/// through `Handoff` batches; these are the rare control steps, carried by the workers' command queues.
public enum PeerMessage: Sendable, Equatable {
    /// Home to host: answer this transport's ICE checks with `local` and run its DTLS server; send what
    /// arrives to the home.
    case host(ConnectionID, local: ICECredentials, remote: RemoteTransport)
    /// Home to host: the client restarted ICE (RFC 8445 section 9).
    case restartICE(ConnectionID, local: ICECredentials, remote: RemoteTransport)
    /// Home to host: forget the transport (DTLS close_notify first when `notify`).
    case release(ConnectionID, notify: Bool)
    /// Host to home: what the host's edge reported for the transport (nomination, keys, state, failure).
    case transport(WorkerEdge.Output)
    /// Host to home: the client passed a connectivity check (to say why a handshake that stalls stalled).
    case checked(ConnectionID)
}
