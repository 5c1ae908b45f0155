import AppStoreClients
import AuditTrail
import Dashboard
import Foundation
import LocalFiles
import NotificationReceiver
import ReceiptDemo
import ReceiptCore
import ReceiptTrust
import TerminalNcurses
import TerminalUI

/// What `receiptdash dash` sets up once its arguments are read and its stores are open: the
/// first screen's receipts and log lines, and the live parts (the audit link, the watched
/// sources, the embedded receiver or the followed database's notifications).
public struct DashboardLaunch {
    public var files: [String] = []
    /// Folders and log files watched for new receipts.
    public var watch: [String] = []
    /// Attached read-only to `backend`, showing what another process records.
    public var follow = false
    /// Raise a banner when no notification arrives for this many seconds.
    public var expectEvery: Double?
    /// The `--db` store (records, look-ups, and the embedded receiver's notifications).
    public var backend: (any AuditBackend)?
    public var receiving: Receiving?

    /// The embedded receiver (`--receive PORT`).
    public struct Receiving {
        public var host: String
        public var port: Int
        /// Where notifications are stored; closed with the session when it is not `backend`.
        public var store: any AuditBackend
        public var policy: ReceiverPolicy

        public init(host: String, port: Int, store: any AuditBackend, policy: ReceiverPolicy) {
            self.host = host
            self.port = port
            self.store = store
            self.policy = policy
        }
    }

    public init() {}

    /// The session's live parts; ``stop()`` ends them (the receiver commits what it queued).
    public struct Live {
        public let audit: StoreAuditLink?
        public let notifications: (any NotificationFeed)?
        public let watchFeed: WatchFeed?
        /// The inputs the files named at start hold, for the loop to read and judge.
        public let startup: [InputFiles.Origin]
        let receiver: EmbeddedReceiver?
        let ownStore: (any AuditBackend)?

        public func stop() async {
            await receiver?.stop()
            await ownStore?.close()
        }

        /// Runs the dashboard on the terminal (ncurses, `theme`) until the person quits, on one
        /// thread that owns the terminal for the whole session (the loop, before and after each
        /// await, runs there), then stops the live parts. Returns the signal that ended it
        /// (Ctrl-C, SIGTERM, SIGHUP), if one did; the terminal is restored by then.
        public func run(
            _ state: inout DashboardState, theme: Theme, pipeline: ReceiptPipeline, verifier: ServiceVerifier?, lookup: ServiceLookup?,
            acting: ServiceActions?
        ) async -> Int32? {
            let ui = SingleThreadExecutor(name: "receiptdash-ui")
            var interruption: Int32?
            // Forwarding's counts are read beside the UI loop, ended with it.
            await withDiscardingTaskGroup { group in
                if let forwarding = notifications as? ForwardingFeed {
                    group.addTask { await forwarding.run(clock: ContinuousClock()) }
                }
                interruption = await withTaskExecutorPreference(ui) {
                    let terminal = NcursesTerminal(theme: theme)
                    await DashboardApp.run(
                        &state, backend: terminal, pipeline: pipeline, verifier: verifier, audit: audit, feed: watchFeed, lookup: lookup,
                        notifications: notifications, acting: acting, clipboard: TmuxClipboard(), startup: startup)
                    terminal.shutdown()
                    return terminal.interruption
                }
                group.cancelAll()
            }
            await stop()
            return interruption
        }
    }

    /// Writes to Apple from the dashboard (`x`) over `lookup`'s client, recorded in a trail
    /// before they leave: in `backend`, else in the default audit store (`defaultStore`, opened
    /// here: ``Acting/opened`` is closed with the session). None when writes are refused
    /// (`readOnlyReason`), from a follower, or when no trail can be written: the state says why.
    /// The Customer view then reads the trail the writes go to.
    public func acting(
        _ lookup: inout ServiceLookup?, readOnlyReason: String?, state: inout DashboardState, defaultStore path: String,
        open: (String) async throws -> any AuditBackend, words: (any Error) -> String
    ) async -> Acting {
        guard let service = lookup?.service else { return Acting(actions: nil, opened: nil) }
        if let readOnlyReason {
            state.actionsUnavailableReason = "read-only (\(readOnlyReason)): x would write to Apple"
            return Acting(actions: nil, opened: nil)
        }
        if follow {
            state.actionsUnavailableReason =
                "following read-only (--follow): writes to Apple are not made from a follower; run the dashboard without --follow to act"
            return Acting(actions: nil, opened: nil)
        }
        var opened: (any AuditBackend)?
        let store: any AuditBackend
        if let backend {
            store = backend
        } else {
            do {
                store = try await open(path)
                opened = store
            } catch {
                state.actionsUnavailableReason =
                    "the audit trail \(path) cannot be written (\(words(error))): a write must be recorded before it is sent; give --db"
                return Acting(actions: nil, opened: nil)
            }
        }
        lookup?.trail = store
        return Acting(actions: ServiceActions(actions: CustomerActions(client: service.client, pipeline: service.pipeline), store: store), opened: opened)
    }

    /// The dashboard's writes, and the store opened for them (closed with the session).
    public struct Acting {
        public let actions: ServiceActions?
        public let opened: (any AuditBackend)?
    }

    /// Fills the first screen (receipts given, or the demo's when nothing live is asked for,
    /// and the log lines that say what to do next) and starts the live parts.
    public func prepare(_ state: inout DashboardState, pipeline: ReceiptPipeline) async -> Live {
        let audit = backend.map { StoreAuditLink(store: $0, follow: follow) }
        state.followingStore = backend != nil && follow
        if follow {
            state.addLog("following \(backend?.location ?? "?") read-only", role: .info)
        } else if files.isEmpty, receiving != nil {
            state.addLog("no receipts loaded: notifications appear below as they arrive; p pastes, o opens", role: .info)
        } else if files.isEmpty, let backend {
            // Demo receipts stay out of a real audit database.
            state.addLog("no input: p pastes, o opens, : searches the history in \(backend.location)", role: .info)
        } else if files.isEmpty, !watch.isEmpty {
            state.addLog("no input yet: new receipts appear as they arrive; p pastes, o opens", role: .info)
        } else if files.isEmpty {
            state.add(await pipeline.judge(InputFiles.demo()), from: .startup)
        } else {
            // Read and judged by the loop a chunk at a time (``Live/startup``): the first frame
            // does not wait for a whole folder.
            state.addLog("loading \(files.count == 1 ? files[0] : "\(files.count) paths")", role: .info)
        }
        for source in watch {
            state.addLog("watching \(source)", role: .info)
        }
        state.expectNotificationEvery = expectEvery
        var notifications: (any NotificationFeed)?
        var receiver: EmbeddedReceiver?
        if let receiving {
            receiver = EmbeddedReceiver(host: receiving.host, port: receiving.port, backend: receiving.store, policy: receiving.policy)
            notifications = receiver.map { ForwardingFeed($0.feed, outbox: receiving.store, consumption: receiving.store) }
            state.notificationsShown = true
            state.focus = files.isEmpty ? .notifications : state.focus
        } else if follow, let backend {
            notifications = ForwardingFeed(FollowedNotifications(follower: NotificationFollower(backend: backend)), outbox: backend, consumption: backend)
            // With --expect-every the pane is there from the start; otherwise it appears with
            // the first notification the followed database holds.
            state.notificationsShown = expectEvery != nil
        }
        return Live(
            audit: audit, notifications: notifications, watchFeed: watch.isEmpty ? nil : WatchFeed(sources: watch, fromEnd: false),
            startup: follow ? [] : InputFiles.origins(files),
            receiver: receiver, ownStore: backend == nil ? receiving?.store : nil)
    }
}
