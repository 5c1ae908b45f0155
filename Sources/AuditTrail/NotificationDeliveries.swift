extension NotificationRecord {
    /// How many of Apple's deliveries storing this record is: a POST from Apple is one; a copy
    /// from Notification History (peer ``historyPeer``: `notifications --reconcile --ingest`,
    /// the scheduled backfill) is none. A row's `deliveries` adds these up, so it counts Apple's
    /// POSTs exactly: a backfill racing Apple's POST of the same notification, in either order,
    /// leaves 1, and a row only a backfill stored holds 0.
    public var deliveriesCounted: Int { peer == Self.historyPeer ? 0 : 1 }
}
