//! PostgreSQL's clock as the store hands it out: read from the server at most once a second,
//! advanced in between by this machine's monotonic clock, it stays within the kept reading's
//! round trip of the server's own clock and never goes back.

use cortex_store::DbTarget;
use cortex_testdb::TestDb;

/// The slowest round trip whose reading the store keeps (`postgres::clock`), plus the
/// millisecond both sides round down to.
const TOLERANCE_MS: i64 = 5 + 1;

#[test]
fn postgres_times_stay_within_a_round_trip_of_the_servers_clock_and_never_go_back() {
    let db = TestDb::postgres();
    let store = db.open();
    let DbTarget::Postgres { url, .. } = db.target() else { unreachable!("a PostgreSQL database") };
    let mut server = postgres::Client::connect(url, postgres::NoTls).unwrap();
    let mut server_now = || -> i64 {
        server
            .query_typed_one("SELECT (extract(epoch FROM clock_timestamp()) * 1000)::bigint", &[])
            .unwrap()
            .get(0)
    };
    let mut last = i64::MIN;
    // Over more than a second: times from a kept reading, and from readings made again.
    for i in 0..40 {
        let before = server_now();
        let now = store.now().unwrap();
        let after = server_now();
        assert!(before - TOLERANCE_MS <= now && now <= after + 1, "call {i}: {before} ≤ {now} ≤ {after}");
        assert!(now >= last, "call {i}: {now} after {last}");
        last = now;
        std::thread::sleep(std::time::Duration::from_millis(40));
    }
}
