//! Test databases do not outlive their tests, passed or failed.

use longtx_testkit::{sqlx, TestDatabase};

async fn exists(name: &str) -> bool {
    let witness = TestDatabase::create().await;
    let mut conn = witness.connect().await;
    sqlx::query_scalar::<_, bool>("SELECT EXISTS (SELECT 1 FROM pg_database WHERE datname = $1)")
        .bind(name)
        .fetch_one(&mut conn)
        .await
        .unwrap()
}

#[tokio::test]
async fn a_failed_tests_database_is_dropped_as_the_test_unwinds() {
    let (sender, named) = std::sync::mpsc::channel();
    let failed = std::thread::spawn(move || {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap()
            .block_on(async move {
                let db = TestDatabase::create().await;
                let _busy = db.connect().await;
                sender.send(db.name.clone()).unwrap();
                panic!("the test fails while its database is in use");
            })
    })
    .join();
    assert!(failed.is_err(), "the test failed");
    let name = named.recv().unwrap();
    assert!(!exists(&name).await, "{name} was left behind");
}

#[tokio::test]
async fn a_database_lives_until_its_last_clone_is_dropped() {
    let db = TestDatabase::create().await;
    let name = db.name.clone();
    let clone = db.clone();
    drop(db);
    assert!(exists(&name).await);
    drop(clone);
    assert!(!exists(&name).await);
}
