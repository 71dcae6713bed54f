//! A source's API on a loopback port: actix-web on a thread of its own,
//! answering each request from the test's closure, which sees the path
//! with its query and how many times that exact URL was asked before (so a
//! page can fail once, or answer 429 once).

use std::collections::HashMap;
use std::net::TcpListener;
use std::sync::{Arc, Mutex};

use actix_web::{App, HttpRequest, HttpResponse, HttpServer, web};

/// What the fake answers: status, `Retry-After`, JSON body.
pub struct Answer {
    pub status: u16,
    pub retry_after: Option<&'static str>,
    pub body: String,
}

impl Answer {
    pub fn json(body: serde_json::Value) -> Self {
        Self {
            status: 200,
            retry_after: None,
            body: body.to_string(),
        }
    }

    pub fn status(status: u16) -> Self {
        Self {
            status,
            retry_after: None,
            body: format!("{{\"error\": \"status {status}\"}}"),
        }
    }

    pub fn rate_limited(seconds: &'static str) -> Self {
        Self {
            status: 429,
            retry_after: Some(seconds),
            body: "{\"error\": \"slow down\"}".into(),
        }
    }
}

type Handler = dyn Fn(&str, usize) -> Answer + Send + Sync;

struct State {
    handler: Box<Handler>,
    key_header: &'static str,
    key: &'static str,
    asked: Mutex<HashMap<String, usize>>,
    log: Mutex<Vec<String>>,
}

pub struct FakeApi {
    pub base: String,
    state: Arc<State>,
    handle: actix_web::dev::ServerHandle,
}

impl FakeApi {
    /// Serves `handler` to requests carrying `key_header: key`; any other
    /// key gets 401 without the handler being asked.
    pub fn start(
        key_header: &'static str,
        key: &'static str,
        handler: impl Fn(&str, usize) -> Answer + Send + Sync + 'static,
    ) -> Self {
        let state = Arc::new(State {
            handler: Box::new(handler),
            key_header,
            key,
            asked: Mutex::default(),
            log: Mutex::default(),
        });
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
        let base = format!("http://{}", listener.local_addr().expect("addr"));
        let (tx, rx) = std::sync::mpsc::channel();
        let served = state.clone();
        std::thread::spawn(move || {
            let system = actix_web::rt::System::new();
            system.block_on(async move {
                let data = web::Data::from(served);
                let server = HttpServer::new(move || {
                    App::new()
                        .app_data(data.clone())
                        .default_service(web::to(answer))
                })
                .workers(1)
                .listen(listener)
                .expect("listen")
                .run();
                tx.send(server.handle()).expect("handle");
                let _ = server.await;
            });
        });
        let handle = rx.recv().expect("server started");
        Self {
            base,
            state,
            handle,
        }
    }

    /// Every request's path and query, in order.
    pub fn requests(&self) -> Vec<String> {
        self.state.log.lock().expect("log").clone()
    }
}

impl Drop for FakeApi {
    fn drop(&mut self) {
        drop(self.handle.stop(false));
    }
}

async fn answer(request: HttpRequest, state: web::Data<State>) -> HttpResponse {
    let target = match request.uri().query() {
        Some(q) => format!("{}?{q}", request.uri().path()),
        None => request.uri().path().to_owned(),
    };
    state.log.lock().expect("log").push(target.clone());
    let given = request
        .headers()
        .get(state.key_header)
        .and_then(|v| v.to_str().ok());
    if given != Some(state.key) {
        return HttpResponse::Unauthorized()
            .content_type("application/json")
            .body("{\"error\": \"invalid API key\"}");
    }
    let times = {
        let mut asked = state.asked.lock().expect("asked");
        let n = asked.entry(target.clone()).or_insert(0);
        *n += 1;
        *n - 1
    };
    let a = (state.handler)(&target, times);
    let mut response =
        HttpResponse::build(actix_web::http::StatusCode::from_u16(a.status).expect("status"));
    if let Some(r) = a.retry_after {
        response.insert_header(("Retry-After", r));
    }
    response.content_type("application/json").body(a.body)
}

/// The value of `name` in a query string.
pub fn query<'a>(target: &'a str, name: &str) -> Option<&'a str> {
    let (_, q) = target.split_once('?')?;
    q.split('&')
        .filter_map(|p| p.split_once('='))
        .find(|(k, _)| *k == name)
        .map(|(_, v)| v)
}
