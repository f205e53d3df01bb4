import HTTPTypes
import Hummingbird
import HummingbirdCore
import HummingbirdWebSocket
import Logging
import NIOCore
import NIOHTTPTypes

/// The control API's request context: Hummingbird's WebSocket-capable one, and the connection the request came
/// on, where a WebSocket opening the API refuses notes its answer (`WebSocketRefusals`).
public struct APIRequestContext: RequestContext, WebSocketRequestContext {
    public var coreContext: CoreRequestContextStorage
    public let webSocket: WebSocketHandlerReference<Self>
    let channel: any Channel

    public init(source: ApplicationRequestContextSource) {
        coreContext = .init(source: source)
        webSocket = .init()
        channel = source.channel
    }
}

/// WebSocket openings answered like every other request. Hummingbird's WebSocket layer asks the WebSocket
/// router whether to upgrade and, when it does not, writes a bare 400 whatever the router answered: a missing
/// or wrong API key (401, 6013), a refused origin (403, 6016), a node in no cluster on `/v1/relay` (404, 6021)
/// or an unknown route (404, 6011) all read as "400, no body" - not what docs/openapi.yaml promises, and nothing a
/// client can act on. Here the router's refusal is noted on the connection (`Note`, in the pipeline from the
/// connection's set-up) and the bare 400 that follows is replaced by it (`Writer`, among the HTTP handlers of
/// a connection that was not upgraded): same status, headers and `{"result", "msg"}` body as the same refusal
/// without the upgrade.
enum WebSocketRefusals {
    /// The HTTP/1.1 server with WebSocket upgrade of the control API.
    static func server(webSocketRouter: Router<APIRequestContext>, configuration: HTTP1WebSocketUpgradeChannel.Configuration) -> HTTPServerBuilder {
        let noting = NotingResponder(inner: webSocketRouter.buildResponder())
        let http1 = configuration.http1
        var withWriter = HTTP1Channel.Configuration(additionalChannelHandlers: http1.additionalChannelHandlers() + [Writer()],
                                                    idleTimeout: http1.idleTimeout)
        withWriter.httpDecoder = http1.httpDecoder
        let upgrade = HTTP1WebSocketUpgradeChannel.Configuration(http1: withWriter, ws: configuration.ws)
        return HTTPServerBuilder { responder in
            NotingChannel(inner: HTTP1WebSocketUpgradeChannel(responder: responder, webSocketResponder: noting, configuration: upgrade))
        }
    }

    /// A refusal as written on the wire.
    struct Noted: Sendable {
        var status: HTTPResponse.Status
        var headers: HTTPFields
        var body: ByteBuffer
    }

    /// Where a connection keeps the refusal of its WebSocket opening: a handler found by type, first in the
    /// pipeline, that passes every byte on untouched. Touched on the connection's event loop only.
    final class Note: ChannelInboundHandler, RemovableChannelHandler {
        typealias InboundIn = ByteBuffer
        var refusal: Noted?
    }

    /// The WebSocket router, noting every answer that is not an upgrade on the request's connection.
    struct NotingResponder<Inner: HTTPResponder>: HTTPResponder where Inner.Context == APIRequestContext {
        let inner: Inner

        func respond(to request: Request, context: APIRequestContext) async throws -> Response {
            let response: Response
            do { response = try await inner.respond(to: request, context: context) } catch {
                let e = APIError.from(error)
                response = ControlAPI.response(HTTPResponse.Status(code: e.status.rawValue), Refusal(result: e.code, msg: e.message))
            }
            // An upgrade: the WebSocket router has only WebSocket routes, whose 200 is the upgrade.
            if response.status == .ok { return response }
            let collector = Collector()
            try await response.body.write(collector)
            var headers = response.headers
            headers[.connection] = "close"
            headers[.contentLength] = String(collector.buffer.readableBytes)
            let refusal = Noted(status: response.status, headers: headers, body: collector.buffer)
            let channel = context.channel
            try? await channel.eventLoop.submit { try channel.pipeline.syncOperations.handler(type: Note.self).refusal = refusal }.get()
            return response
        }
    }

    /// Gathers a response body (the API's are one small buffer).
    final class Collector: ResponseBodyWriter {
        var buffer = ByteBuffer()
        func write(_ buffer: ByteBuffer) async throws {
            var b = buffer
            self.buffer.writeBuffer(&b)
        }
        func finish(_ trailingHeaders: HTTPFields?) async throws {}
    }

    /// Replaces the bare response Hummingbird writes for a refused upgrade with the noted refusal (the connection
    /// closes after it). A connection with no refusal noted is passed through untouched.
    final class Writer: ChannelOutboundHandler, RemovableChannelHandler {
        typealias OutboundIn = HTTPResponsePart
        typealias OutboundOut = HTTPResponsePart
        private var note: Note?

        func handlerAdded(context: ChannelHandlerContext) {
            note = try? context.pipeline.syncOperations.handler(type: Note.self)
        }

        func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
            guard case .head = unwrapOutboundIn(data), let refusal = note?.refusal else { return context.write(data, promise: promise) }
            note?.refusal = nil
            context.write(wrapOutboundOut(.head(HTTPResponse(status: refusal.status, headerFields: refusal.headers))), promise: promise)
            context.write(wrapOutboundOut(.body(refusal.body)), promise: nil)
        }
    }

    /// Hummingbird's upgrade channel, with a `Note` in every connection's pipeline.
    struct NotingChannel: ServerChildChannel {
        let inner: HTTP1WebSocketUpgradeChannel

        func setup(channel: any Channel, logger: Logger) -> EventLoopFuture<HTTP1WebSocketUpgradeChannel.Value> {
            channel.eventLoop.makeCompletedFuture { try channel.pipeline.syncOperations.addHandler(Note()) }
                .flatMap { inner.setup(channel: channel, logger: logger) }
        }

        func handle(value: HTTP1WebSocketUpgradeChannel.Value, logger: Logger) async {
            await inner.handle(value: value, logger: logger)
        }
    }
}
