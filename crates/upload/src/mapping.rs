//! Where an app version's R8/ProGuard mapping goes: `PUT /api/mappings/{appVersion}` on
//! the server `serve` runs (the upload token as for packages).

use reqwest::Url;

/// The mapping endpoint of `app_version` on `server`'s server: the path of `server` up to
/// its `/api/` (the package endpoint `…/api/packages` names the same server), or all of
/// it, then `api/mappings/` and the version (percent-encoded); no query.
pub fn mapping_url(server: &Url, app_version: &str) -> Url {
    let mut url = server.clone();
    let path = server.path();
    let base = match path.find("/api/") {
        Some(at) => &path[..at],
        None => path.trim_end_matches('/'),
    }
    .to_string();
    url.set_query(None);
    url.set_fragment(None);
    url.set_path(&base);
    if let Ok(mut segments) = url.path_segments_mut() {
        segments
            .pop_if_empty()
            .extend(["api", "mappings", app_version]);
    }
    url
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_mapping_goes_to_the_servers_mapping_endpoint() {
        let at = |u: &str, v: &str| mapping_url(&Url::parse(u).unwrap(), v).to_string();
        assert_eq!(at("http://h:8080", "1.0"), "http://h:8080/api/mappings/1.0");
        assert_eq!(
            at("http://h/api/packages?x=1", "1.0"),
            "http://h/api/mappings/1.0"
        );
        assert_eq!(
            at("https://h/leaks/", "2.1 (7)/b"),
            "https://h/leaks/api/mappings/2.1%20(7)%2Fb"
        );
    }
}
