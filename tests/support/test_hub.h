#pragma once

// A stand-in for the Hub and its storage CDN: a real nginx on loopback with TLS from a CA made
// here, HTTP/2, Range, a gated repo, and misbehaving hosts. Started and stopped by the tests.
#include "synthetic_layout.h"

#include <QProcess>
#include <QString>
#include <QTemporaryDir>

#include <functional>
#include <map>
#include <memory>
#include <string>

class TestHub
{
public:
    TestHub();
    ~TestHub();

    // Writes a layout as ORG/NAME at a commit; a gated repo answers 401 without the token.
    // Call before start(). Returns the commit.
    std::string addRepo(const std::string &repo, const atlas::synth::LayoutSpec &spec, bool gated = false);
    // A repo of whatever files `write` puts in its folder (a GGUF repository: sets in subfolders, listed with
    // their paths as the Hub lists them). Call before start(). Returns the commit.
    std::string addRepoFiles(const std::string &repo, const std::function<void(const std::string &folder)> &write);
    // Another revision of a repo added before: a branch or tag name that resolves to a commit of its own,
    // with this layout. Call before start(). Returns the commit.
    std::string addRevision(const std::string &repo, const std::string &revision, const atlas::synth::LayoutSpec &spec);
    // The folder where a repo's files live (to damage them after writing).
    std::string repoFolder(const std::string &repo) const;

    // Redirect to another port than the storage host's own (a proxy in front of it). Before start().
    void setStorageRedirectPort(int port) { m_redirectPort = port; }
    // The Hub's resolve redirects to the storage host in cleartext (http://), as a downgrading Hub
    // would. Before start().
    void setCleartextStorage(bool on) { m_cleartextStorage = on; }
    // How the Hub answers a HEAD of a repo's resolve URL (what a client sends to learn a file's storage
    // URL without reading it), where its GET still redirects to the storage host: "http" redirects to the
    // cleartext storage host, a number answers that status. Call before start().
    void setHeadAnswer(const std::string &repo, const std::string &answer) { m_repos[repo].headAnswer = answer; }
    int hubPort() const { return m_hubPort; }
    int storagePort() const { return m_storagePort; }
    bool start(QString *error);
    void stop();

    std::string endpoint() const { return url(m_hubPort); } // the Hub host
    std::string storageUrl(const std::string &repo) const;  // the storage host, a repo's folder
    std::string noRangeUrl(const std::string &repo) const;  // serves the same files, ignores Range
    std::string failingUrl(const std::string &repo) const;  // answers 503 with Retry-After: 1
    std::string plainUrl(const std::string &repo) const;    // the storage host's files over http://
    std::string downgradeUrl(const std::string &repo) const; // https, redirecting every file to plainUrl
    std::string caFile() const;
    std::string token() const { return "hf_atlasTestToken0123456789"; }
    // Everything the storage host was asked, with the Authorization header each request carried.
    std::string storageLog() const;
    std::string hubLog() const;
    std::string plainLog() const; // what the cleartext storage host was asked
    std::string root() const { return m_dir.path().toStdString(); }

private:
    std::string url(int port) const { return "https://127.0.0.1:" + std::to_string(port); }
    struct Repo
    {
        std::string commit;
        bool gated = false;
        std::map<std::string, std::string> revisions; // further revisions: name -> commit
        std::string headAnswer;                        // setHeadAnswer
    };
    QTemporaryDir m_dir;
    QProcess m_nginx;
    std::map<std::string, Repo> m_repos;
    int m_hubPort = 0, m_storagePort = 0, m_noRangePort = 0, m_failingPort = 0;
    int m_redirectPort = 0;
    int m_plainPort = 0, m_downgradePort = 0;
    bool m_cleartextStorage = false;
};

// A free TCP port on 127.0.0.1 (bound, then released).
int freeLoopbackPort();

// A listening socket on 127.0.0.1:port (0: any free port); -1 on failure. *boundPort gets the port.
int listenOnLoopback(int port, int *boundPort = nullptr);
