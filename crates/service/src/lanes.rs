//! Write lanes: how many store calls use the database at once, in all and per tenant.
//!
//! A store call holds at most one of the database's connections at a time, and so does its
//! lane: with half of the connections as lanes, the other half is always there for finds (and
//! for the key checks every request makes), whatever the write load. Half of the lanes is one
//! tenant's most, so one tenant's flood of stores leaves other tenants' stores room as well.
//! A call beyond its share waits for a lane; it is not refused (the HTTP gate's per-key cap of
//! calls at once bounds how many wait).

use std::collections::HashMap;
use std::sync::{Arc, Condvar, Mutex};

/// The lanes for a database serving `connections` calls at once: `(in all, per tenant)`.
/// With a single connection nothing can be kept for finds: one lane.
pub fn shares(connections: usize) -> (usize, usize) {
    let total = (connections / 2).max(1);
    (total, (total / 2).max(1))
}

/// The lanes of one store (shared by every caller's view of the service).
pub struct WriteLanes {
    total: usize,
    per_tenant: usize,
    state: Mutex<Busy>,
    freed: Condvar,
}

#[derive(Default)]
struct Busy {
    taken: usize,
    waiting: usize,
    by_tenant: HashMap<String, usize>,
}

/// What the lanes are doing now, for `/metrics`, `doctor` and tests.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LaneLoad {
    pub total: usize,
    pub per_tenant: usize,
    /// Store calls using the database now.
    pub taken: usize,
    /// Store calls waiting for a lane.
    pub waiting: usize,
}

impl WriteLanes {
    pub fn for_connections(connections: usize) -> WriteLanes {
        let (total, per_tenant) = shares(connections);
        WriteLanes { total, per_tenant, state: Mutex::new(Busy::default()), freed: Condvar::new() }
    }

    fn busy(&self) -> std::sync::MutexGuard<'_, Busy> {
        // A panic elsewhere while holding the lock leaves the counts as they were: keep them.
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// A lane for one of `tenant`'s store calls, waiting while all lanes or the tenant's share
    /// are taken; the lane is given back when the returned guard is dropped.
    pub fn take(self: &Arc<Self>, tenant: &str) -> Lane {
        let mut busy = self.busy();
        busy.waiting += 1;
        loop {
            let mine = busy.by_tenant.get(tenant).copied().unwrap_or(0);
            if busy.taken < self.total && mine < self.per_tenant {
                busy.waiting -= 1;
                busy.taken += 1;
                *busy.by_tenant.entry(tenant.to_string()).or_default() += 1;
                return Lane { lanes: self.clone(), tenant: tenant.to_string() };
            }
            busy = self.freed.wait(busy).unwrap_or_else(|e| e.into_inner());
        }
    }

    pub fn load(&self) -> LaneLoad {
        let busy = self.busy();
        LaneLoad { total: self.total, per_tenant: self.per_tenant, taken: busy.taken, waiting: busy.waiting }
    }
}

/// A store call's lane, held while it runs.
pub struct Lane {
    lanes: Arc<WriteLanes>,
    tenant: String,
}

impl Drop for Lane {
    fn drop(&mut self) {
        let mut busy = self.lanes.busy();
        busy.taken -= 1;
        if let Some(n) = busy.by_tenant.get_mut(&self.tenant) {
            *n -= 1;
            if *n == 0 {
                busy.by_tenant.remove(&self.tenant);
            }
        }
        drop(busy);
        // Every waiter checks again: the lane freed may be the only one another tenant may take.
        self.lanes.freed.notify_all();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn half_the_connections_are_lanes_and_half_the_lanes_one_tenants() {
        assert_eq!(shares(8), (4, 2));
        assert_eq!(shares(4), (2, 1));
        assert_eq!(shares(16), (8, 4));
        assert_eq!(shares(1), (1, 1));
        assert_eq!(shares(0), (1, 1));
    }

    #[test]
    fn a_tenant_past_its_share_waits_while_another_gets_a_lane() {
        let lanes = Arc::new(WriteLanes::for_connections(8));
        let a1 = lanes.take("a");
        let _a2 = lanes.take("a");
        let waiter = {
            let lanes = lanes.clone();
            std::thread::spawn(move || drop(lanes.take("a")))
        };
        // The third of `a` waits (its share is 2) ...
        while lanes.load().waiting == 0 {
            std::thread::yield_now();
        }
        // ... while `b` still gets lanes, up to the total.
        let _b1 = lanes.take("b");
        let _b2 = lanes.take("b");
        assert_eq!(lanes.load(), LaneLoad { total: 4, per_tenant: 2, taken: 4, waiting: 1 });
        drop(a1);
        waiter.join().unwrap();
        assert_eq!(lanes.load(), LaneLoad { total: 4, per_tenant: 2, taken: 3, waiting: 0 });
    }
}
