//! One certificate order through instant-acme: the account loaded from the
//! store or created once and stored, a new order for the names, HTTP-01
//! answered through the [`Http01Responder`], the order polled within a
//! deadline, finalised with a CSR whose key rcgen makes here (the CA never
//! sees it), and the chain returned with that key.

use std::time::Duration;

use instant_acme::{
    Account, AccountBuilder, AccountCredentials, AuthorizationStatus, ChallengeType, Identifier,
    NewAccount, NewOrder, Order, OrderStatus, RetryPolicy,
};

use super::error::{describe, one_line, problem_line};
use super::{
    AcmeError, AcmeSettings, CertStore, CertificateBundle, Http01Responder, TlsAlpn01Responder,
};

/// An account at one ACME directory.
pub struct AcmeClient {
    account: Account,
}

impl AcmeClient {
    /// The account stored for the directory, or a new one (the terms of
    /// service agreed, the contact given) created and stored before it is
    /// used, so a node creates one account once.
    pub async fn connect(
        settings: &AcmeSettings,
        store: &dyn CertStore,
    ) -> Result<Self, AcmeError> {
        let directory = settings.directory.as_str();
        let account_error = |detail: String| AcmeError::Account {
            directory: directory.into(),
            detail,
        };
        if let Some(json) = store.account(directory).await? {
            let credentials: AccountCredentials = serde_json::from_str(&json)
                .map_err(|e| account_error(format!("the stored credentials do not parse: {e}")))?;
            let account = builder(settings)?
                .from_credentials(credentials)
                .await
                .map_err(|e| account_error(describe(&e)))?;
            return Ok(Self { account });
        }
        let contact = settings
            .contact
            .as_ref()
            .map(|mail| format!("mailto:{mail}"));
        let contacts: Vec<&str> = contact.iter().map(String::as_str).collect();
        let new = NewAccount {
            contact: &contacts,
            terms_of_service_agreed: true,
            only_return_existing: false,
        };
        let (account, credentials) = builder(settings)?
            .create(&new, directory.to_string(), None)
            .await
            .map_err(|e| account_error(describe(&e)))?;
        let json = serde_json::to_string(&credentials)
            .map_err(|e| account_error(format!("cannot keep the credentials: {e}")))?;
        store.put_account(directory, &json).await?;
        Ok(Self { account })
    }

    /// The account's URL at the CA.
    pub fn account_id(&self) -> &str {
        self.account.id()
    }

    /// Orders a certificate for `names` (the first is its subject), done or
    /// given up within `deadline`. Every token put into the responder is
    /// removed again, whatever the outcome.
    pub async fn order(
        &self,
        names: &[String],
        responder: &dyn Http01Responder,
        deadline: Duration,
    ) -> Result<CertificateBundle, AcmeError> {
        self.order_answering(
            names,
            Answering::Http01 {
                responder,
                shared: None,
            },
            deadline,
        )
        .await
    }

    /// As [`order`](Self::order), answering as `answering` says (issue 36).
    pub async fn order_answering(
        &self,
        names: &[String],
        answering: Answering<'_>,
        deadline: Duration,
    ) -> Result<CertificateBundle, AcmeError> {
        let mut tokens = Vec::new();
        let outcome =
            tokio::time::timeout(deadline, self.run(names, &answering, &mut tokens, deadline))
                .await;
        for token in &tokens {
            match &answering {
                Answering::Http01 { responder, shared } => {
                    responder.remove(token);
                    if let Some(store) = shared
                        && let Err(e) = store.remove_challenge(token).await
                    {
                        tracing::warn!("ACME: removing the shared answer of a challenge: {e}");
                    }
                }
                Answering::TlsAlpn01(responder) => responder.remove(token),
            }
        }
        outcome.unwrap_or_else(|_| {
            Err(AcmeError::Timeout {
                names: names.join(", "),
                secs: deadline.as_secs(),
            })
        })
    }

    async fn run(
        &self,
        names: &[String],
        answering: &Answering<'_>,
        tokens: &mut Vec<String>,
        deadline: Duration,
    ) -> Result<CertificateBundle, AcmeError> {
        let refused = |e: instant_acme::Error| match e {
            instant_acme::Error::Api(problem) => AcmeError::Refused {
                names: names.join(", "),
                detail: problem_line(&problem),
            },
            other => AcmeError::Protocol(describe(&other)),
        };
        let identifiers: Vec<Identifier> = names.iter().cloned().map(Identifier::Dns).collect();
        let mut order = self
            .account
            .new_order(&NewOrder::new(&identifiers))
            .await
            .map_err(refused)?;

        let mut authorizations = order.authorizations();
        while let Some(authorization) = authorizations.next().await {
            let mut authorization = authorization.map_err(refused)?;
            let name = authorization.identifier().to_string();
            match authorization.status {
                AuthorizationStatus::Valid => continue,
                AuthorizationStatus::Pending => {}
                other => {
                    return Err(AcmeError::Validation {
                        name,
                        detail: format!("the authorisation is {other:?}"),
                    });
                }
            }
            let mut challenge = match answering {
                Answering::Http01 { responder, shared } => {
                    let challenge = authorization
                        .challenge(ChallengeType::Http01)
                        .ok_or_else(|| AcmeError::NoHttp01 { name: name.clone() })?;
                    let answer = challenge.key_authorization();
                    responder.put(&challenge.token, answer.as_str());
                    tokens.push(challenge.token.clone());
                    // A failed write leaves the answer with this node alone,
                    // which still passes when the CA's request reaches it.
                    if let Some(store) = shared
                        && let Err(e) = store.put_challenge(&challenge.token, answer.as_str()).await
                    {
                        tracing::warn!(
                            "ACME: sharing a challenge's answer with the other nodes: {e}"
                        );
                    }
                    challenge
                }
                Answering::TlsAlpn01(responder) => {
                    let challenge = authorization
                        .challenge(ChallengeType::TlsAlpn01)
                        .ok_or_else(|| AcmeError::NoTlsAlpn01 { name: name.clone() })?;
                    let answer =
                        alpn_answer(&name, challenge.key_authorization().digest().as_ref())?;
                    responder
                        .put(&name, &answer)
                        .map_err(|detail| AcmeError::Validation {
                            name: name.clone(),
                            detail,
                        })?;
                    tokens.push(name.clone());
                    challenge
                }
            };
            challenge
                .set_ready()
                .await
                .map_err(|e| AcmeError::Validation {
                    name,
                    detail: describe(&e),
                })?;
        }

        let polling = RetryPolicy::new()
            .initial_delay(Duration::from_millis(250))
            .backoff(1.5)
            .timeout(deadline);
        // A problem while the order is pending is a failed validation (the
        // order holds it as its error), not a refusal.
        let status = match order.poll_ready(&polling).await {
            Ok(status) => status,
            Err(instant_acme::Error::Api(problem)) => {
                return Err(validation_failure(&mut order, names, Some(&problem)).await);
            }
            Err(other) => return Err(AcmeError::Protocol(describe(&other))),
        };
        if status != OrderStatus::Ready {
            return Err(validation_failure(&mut order, names, None).await);
        }

        let key = rcgen::KeyPair::generate().map_err(|e| AcmeError::Key(e.to_string()))?;
        let mut params = rcgen::CertificateParams::new(names.to_vec())
            .map_err(|e| AcmeError::Key(e.to_string()))?;
        params.distinguished_name = rcgen::DistinguishedName::new();
        let csr = params
            .serialize_request(&key)
            .map_err(|e| AcmeError::Key(e.to_string()))?;
        order.finalize_csr(csr.der()).await.map_err(refused)?;
        let chain_pem = order.poll_certificate(&polling).await.map_err(refused)?;
        Ok(CertificateBundle {
            chain_pem,
            key_pem: key.serialize_pem(),
        })
    }
}

/// How an order's challenges are answered (issue 36).
pub enum Answering<'a> {
    /// HTTP-01 through the port-80 listener's map, each answer also kept
    /// in `shared` (the store several nodes share, so the node the CA's
    /// request reaches answers it though another ordered) before the CA is
    /// told, and removed from it after.
    Http01 {
        responder: &'a dyn Http01Responder,
        shared: Option<&'a dyn CertStore>,
    },
    /// TLS-ALPN-01 on the public TLS listener.
    TlsAlpn01(&'a dyn TlsAlpn01Responder),
}

/// The TLS-ALPN-01 answer for `name` (RFC 8737 section 3): a self-signed
/// certificate for the name alone with the critical acmeIdentifier
/// extension holding the SHA-256 of the key authorization, on a key of its
/// own, thrown away with the order.
pub fn alpn_answer(name: &str, digest: &[u8]) -> Result<CertificateBundle, AcmeError> {
    if digest.len() != 32 {
        return Err(AcmeError::Key(format!(
            "a TLS-ALPN-01 digest of {} bytes, not 32",
            digest.len()
        )));
    }
    let key = rcgen::KeyPair::generate().map_err(|e| AcmeError::Key(e.to_string()))?;
    let mut params = rcgen::CertificateParams::new(vec![name.to_owned()])
        .map_err(|e| AcmeError::Key(e.to_string()))?;
    params.custom_extensions = vec![rcgen::CustomExtension::new_acme_identifier(digest)];
    let cert = params
        .self_signed(&key)
        .map_err(|e| AcmeError::Key(e.to_string()))?;
    Ok(CertificateBundle {
        chain_pem: cert.pem(),
        key_pem: key.serialize_pem(),
    })
}

fn builder(settings: &AcmeSettings) -> Result<AccountBuilder, AcmeError> {
    match &settings.ca_root {
        Some(path) => Account::builder_with_root(path).map_err(|e| AcmeError::CaRoot {
            path: path.clone(),
            detail: describe(&e),
        }),
        None => Account::builder().map_err(|e| AcmeError::Protocol(describe(&e))),
    }
}

/// The first failed challenge's problem, which names the name and says why
/// (a CA may give the order only "invalid"), else the order's own problem.
async fn validation_failure(
    order: &mut Order,
    names: &[String],
    order_problem: Option<&instant_acme::Problem>,
) -> AcmeError {
    let mut authorizations = order.authorizations();
    while let Some(Ok(mut authorization)) = authorizations.next().await {
        if authorization.refresh().await.is_err() {
            continue;
        }
        let name = authorization.identifier().to_string();
        for challenge in &authorization.challenges {
            if let Some(problem) = &challenge.error {
                return AcmeError::Validation {
                    name,
                    detail: problem_line(problem),
                };
            }
        }
    }
    AcmeError::Validation {
        name: names.join(", "),
        detail: order_problem.map_or_else(
            || one_line("the order became invalid and the CA gave no reason"),
            problem_line,
        ),
    }
}
