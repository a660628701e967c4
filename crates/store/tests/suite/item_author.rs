//! The author an item carries (`StoredItem::author`): the principal of the write that made its
//! current version. The migration that adds it reads each older item's trail: the principal
//! of its latest insert, import or update (never of a delete or a supersede), none when the
//! trail names none; and it leaves every update time as it was.

use cortex_store::Store;
use cortex_testdb::{Backend, TestDb, per_backend};
use uuid::Uuid;

per_backend!(the_migration_takes_each_items_author_from_its_trail);

fn author(store: &dyn Store, id: Uuid) -> (Option<String>, i64) {
    let item = store.get(&[id]).unwrap().remove(0);
    (item.author, item.record.updated_at)
}

fn the_migration_takes_each_items_author_from_its_trail(db: &TestDb) {
    let before = match db.backend() {
        Backend::Sqlite => 17,
        Backend::Postgres => 19,
    };
    cortex_store::migrate_to(db.target(), before).unwrap();
    let item = |name: &str, at: i64| {
        let id = Uuid::now_v7();
        db.execute_raw(&format!(
            "INSERT INTO items (id, kind, org, project, branch, title, body, data, content_hash, created_at, \
             updated_at) VALUES ('{id}', 'section', 'acme', 'api', 'main', '{name}', '', '{{}}', 'h-{name}', \
             {at}, {at})"
        ))
        .unwrap();
        id
    };
    let record = |id: Uuid, at: i64, operation: &str, principal: &str| {
        let into = match db.backend() {
            Backend::Sqlite => "audit_append",
            Backend::Postgres => "audit_log",
        };
        db.execute_raw(&format!(
            "INSERT INTO {into} (at, operation, item_id, kind, org, project, branch, summary, principal) \
             VALUES ({at}, '{operation}', '{id}', 'section', 'acme', 'api', 'main', '{operation}d', '{principal}')"
        ))
        .unwrap();
    };
    let edited = item("edited", 1_000);
    record(edited, 1_100, "update", "key:acme/ci");
    let deleted = item("deleted", 2_000);
    record(deleted, 2_100, "update", "key:acme/ci");
    record(deleted, 2_200, "update", "local:dana");
    record(deleted, 2_300, "delete", "key:acme/admin");
    let unnamed = item("unnamed", 3_000);

    let store = db.open();
    assert_eq!(author(&*store, edited), (Some("key:acme/ci".into()), 1_000));
    assert_eq!(
        author(&*store, deleted),
        (Some("local:dana".into()), 2_000),
        "the last write, not the delete"
    );
    assert_eq!(author(&*store, unnamed), (None, 3_000));
}
