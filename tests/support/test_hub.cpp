#include "test_hub.h"

#include <QDir>
#include <QFile>
#include <QThread>

#include <nlohmann/json.hpp>

#include <arpa/inet.h>
#include <fstream>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

int freeLoopbackPort()
{
    const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    a.sin_port = 0;
    socklen_t len = sizeof a;
    int port = 0;
    if (::bind(fd, reinterpret_cast<sockaddr *>(&a), sizeof a) == 0 &&
        ::getsockname(fd, reinterpret_cast<sockaddr *>(&a), &len) == 0)
        port = ntohs(a.sin_port);
    ::close(fd);
    return port;
}

int listenOnLoopback(int port, int *boundPort)
{
    const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
    int one = 1;
    ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    a.sin_port = htons(static_cast<std::uint16_t>(port));
    socklen_t len = sizeof a;
    if (::bind(fd, reinterpret_cast<sockaddr *>(&a), sizeof a) != 0 || ::listen(fd, 128) != 0 ||
        ::getsockname(fd, reinterpret_cast<sockaddr *>(&a), &len) != 0) {
        ::close(fd);
        return -1;
    }
    if (boundPort) *boundPort = ntohs(a.sin_port);
    return fd;
}

namespace {

bool run(const QString &program, const QStringList &args, const QString &dir, QString *error)
{
    QProcess p;
    p.setWorkingDirectory(dir);
    p.start(program, args);
    if (!p.waitForFinished(60000) || p.exitStatus() != QProcess::NormalExit || p.exitCode() != 0) {
        if (error)
            *error = program + QStringLiteral(" failed: ") + QString::fromLocal8Bit(p.readAllStandardError());
        return false;
    }
    return true;
}

std::string slurp(const std::string &path)
{
    std::ifstream in(path);
    return std::string(std::istreambuf_iterator<char>(in), {});
}

std::string commitFor(const std::string &repo)
{
    // A stable 40-hex commit per repo name.
    std::string out;
    std::uint64_t h = 1469598103934665603ULL;
    for (int round = 0; out.size() < 40; ++round) {
        for (char c : repo + std::to_string(round))
            h = (h ^ static_cast<unsigned char>(c)) * 1099511628211ULL;
        char buf[17];
        std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(h));
        out += buf;
    }
    return out.substr(0, 40);
}

} // namespace

TestHub::TestHub() = default;

TestHub::~TestHub()
{
    stop();
}

std::string TestHub::repoFolder(const std::string &repo) const
{
    auto it = m_repos.find(repo);
    return root() + "/storage/" + repo + "/" + (it == m_repos.end() ? std::string() : it->second.commit);
}

std::string TestHub::addRepo(const std::string &repo, const atlas::synth::LayoutSpec &spec, bool gated)
{
    Repo r;
    r.commit = commitFor(repo);
    r.gated = gated;
    m_repos[repo] = r;
    const std::string folder = repoFolder(repo);
    atlas::synth::writeCheckpoint(spec, folder);
    nlohmann::json api;
    api["id"] = repo;
    api["sha"] = r.commit;
    api["siblings"] = nlohmann::json::array();
    for (const auto &e : std::filesystem::directory_iterator(folder))
        api["siblings"].push_back({{"rfilename", e.path().filename().string()}});
    std::filesystem::create_directories(root() + "/hub/" + repo);
    std::ofstream(root() + "/hub/" + repo + "/revision.json") << api.dump();
    return r.commit;
}

std::string TestHub::addRepoFiles(const std::string &repo, const std::function<void(const std::string &folder)> &write)
{
    Repo r;
    r.commit = commitFor(repo);
    m_repos[repo] = r;
    const std::string folder = repoFolder(repo);
    std::filesystem::create_directories(folder);
    write(folder);
    nlohmann::json api;
    api["id"] = repo;
    api["sha"] = r.commit;
    api["siblings"] = nlohmann::json::array();
    for (const auto &e : std::filesystem::recursive_directory_iterator(folder))
        if (e.is_regular_file())
            api["siblings"].push_back({{"rfilename", std::filesystem::relative(e.path(), folder).string()}});
    std::filesystem::create_directories(root() + "/hub/" + repo);
    std::ofstream(root() + "/hub/" + repo + "/revision.json") << api.dump();
    return r.commit;
}

std::string TestHub::addRevision(const std::string &repo, const std::string &revision,
                                 const atlas::synth::LayoutSpec &spec)
{
    Repo &r = m_repos.at(repo);
    const std::string commit = commitFor(repo + "@" + revision);
    r.revisions[revision] = commit;
    const std::string folder = root() + "/storage/" + repo + "/" + commit;
    atlas::synth::writeCheckpoint(spec, folder);
    nlohmann::json api;
    api["id"] = repo;
    api["sha"] = commit;
    api["siblings"] = nlohmann::json::array();
    for (const auto &e : std::filesystem::directory_iterator(folder))
        api["siblings"].push_back({{"rfilename", e.path().filename().string()}});
    std::ofstream(root() + "/hub/" + repo + "/revision-" + commit + ".json") << api.dump();
    return commit;
}

std::string TestHub::storageUrl(const std::string &repo) const
{
    return url(m_storagePort) + "/" + repo + "/" + m_repos.at(repo).commit + "/";
}

std::string TestHub::noRangeUrl(const std::string &repo) const
{
    return url(m_noRangePort) + "/" + repo + "/" + m_repos.at(repo).commit + "/";
}

std::string TestHub::failingUrl(const std::string &repo) const
{
    return url(m_failingPort) + "/" + repo + "/" + m_repos.at(repo).commit + "/";
}

std::string TestHub::caFile() const
{
    return root() + "/tls/ca.pem";
}

std::string TestHub::plainUrl(const std::string &repo) const
{
    return "http://127.0.0.1:" + std::to_string(m_plainPort) + "/" + repo + "/" + m_repos.at(repo).commit + "/";
}

std::string TestHub::downgradeUrl(const std::string &repo) const
{
    return url(m_downgradePort) + "/" + repo + "/" + m_repos.at(repo).commit + "/";
}

std::string TestHub::plainLog() const
{
    return slurp(root() + "/logs/plain.log");
}

std::string TestHub::storageLog() const
{
    return slurp(root() + "/logs/storage.log");
}

std::string TestHub::hubLog() const
{
    return slurp(root() + "/logs/hub.log");
}

bool TestHub::start(QString *error)
{
    const QString base = m_dir.path();
    QDir().mkpath(base + QStringLiteral("/tls"));
    QDir().mkpath(base + QStringLiteral("/logs"));
    QDir().mkpath(base + QStringLiteral("/tmp"));
    const QString tls = base + QStringLiteral("/tls");
    {
        std::ofstream(tls.toStdString() + "/server.ext")
            << "basicConstraints=CA:FALSE\nkeyUsage=critical,digitalSignature\nextendedKeyUsage=serverAuth\n"
               "subjectAltName=IP:127.0.0.1,DNS:localhost\n";
    }
    const QString openssl = QStringLiteral("openssl");
    auto L = [](const char *s) { return QString::fromLatin1(s); };
    if (!run(openssl,
             {L("req"), L("-x509"), L("-newkey"), L("ec"), L("-pkeyopt"), L("ec_paramgen_curve:prime256v1"),
              L("-nodes"), L("-keyout"), L("ca.key"), L("-out"), L("ca.pem"), L("-days"), L("3"), L("-subj"),
              L("/CN=Checkpoint Atlas Test CA"), L("-addext"), L("basicConstraints=critical,CA:TRUE"),
              L("-addext"), L("keyUsage=critical,keyCertSign,cRLSign")},
             tls, error) ||
        !run(openssl,
             {L("req"), L("-newkey"), L("ec"), L("-pkeyopt"), L("ec_paramgen_curve:prime256v1"), L("-nodes"),
              L("-keyout"), L("server.key"), L("-out"), L("server.csr"), L("-subj"), L("/CN=127.0.0.1")},
             tls, error) ||
        !run(openssl,
             {L("x509"), L("-req"), L("-in"), L("server.csr"), L("-CA"), L("ca.pem"), L("-CAkey"),
              L("ca.key"), L("-CAcreateserial"), L("-out"), L("server.pem"), L("-days"), L("3"),
              L("-extfile"), L("server.ext")},
             tls, error))
        return false;

    m_hubPort = freeLoopbackPort();
    m_storagePort = freeLoopbackPort();
    m_noRangePort = freeLoopbackPort();
    m_failingPort = freeLoopbackPort();
    m_plainPort = freeLoopbackPort();
    m_downgradePort = freeLoopbackPort();
    const std::string r = root();
    const std::string storage = m_cleartextStorage ? "http://127.0.0.1:" + std::to_string(m_plainPort)
                                                   : url(m_redirectPort ? m_redirectPort : m_storagePort);
    std::string hubLocations;
    for (const auto &[repo, info] : m_repos) {
        const std::string auth =
            info.gated ? "        if ($hub_auth_ok = 0) { add_header X-Error-Code GatedRepo always; "
                         "add_header X-Error-Message \"Access to this repository is restricted.\" always; "
                         "return 401; }\n"
                       : "";
        for (const std::string &rev : {std::string("main"), info.commit}) {
            hubLocations += "    location = /api/models/" + repo + "/revision/" + rev + " {\n" + auth +
                            "        default_type application/json;\n        alias " + r + "/hub/" + repo +
                            "/revision.json;\n    }\n";
        }
        for (const auto &[name, commit] : info.revisions) {
            for (const std::string &rev : {name, commit})
                hubLocations += "    location = /api/models/" + repo + "/revision/" + rev + " {\n" + auth +
                                "        default_type application/json;\n        alias " + r + "/hub/" + repo +
                                "/revision-" + commit + ".json;\n    }\n";
            hubLocations += "    location ~ ^/" + repo + "/(?:resolve|raw)/(" + commit + "|" + name +
                            ")/(?<file>.+)$ {\n" + auth + "        if (!-f " + r + "/storage/" + repo + "/" + commit +
                            "/$file) { add_header X-Error-Code EntryNotFound always; return 404; }\n"
                            "        return 302 " +
                            storage + "/" + repo + "/" + commit + "/$file;\n    }\n";
        }
        hubLocations += "    location ^~ /api/models/" + repo + "/revision/ {\n" + auth +
                        "        add_header X-Error-Code RevisionNotFound always; return 404;\n    }\n";
        // Resolve answers for the commit and for "main" (what clients that skip the API ask for).
        std::string head;
        if (info.headAnswer == "http")
            head = "        if ($request_method = HEAD) { return 302 http://127.0.0.1:" + std::to_string(m_plainPort) +
                   "/" + repo + "/" + info.commit + "/$file; }\n";
        else if (!info.headAnswer.empty())
            head = "        if ($request_method = HEAD) { return " + info.headAnswer + "; }\n";
        hubLocations += "    location ~ ^/" + repo + "/(?:resolve|raw)/(" + info.commit +
                        "|main)/(?<file>.+)$ {\n" + auth + head + "        if (!-f " + r + "/storage/" + repo + "/" +
                        info.commit +
                        "/$file) { add_header X-Error-Code EntryNotFound always; return 404; }\n"
                        "        return 302 " +
                        storage + "/" + repo + "/" + info.commit + "/$file;\n    }\n";
    }
    const std::string user = ::geteuid() == 0 ? "user root;\n" : "";
    std::ofstream conf(r + "/nginx.conf");
    conf << user << "worker_processes 1;\npid " << r << "/nginx.pid;\nerror_log " << r
         << "/logs/error.log warn;\nevents { worker_connections 512; }\nhttp {\n"
         << "    log_format atlas '$server_port $status \"$request\" auth=\"$http_authorization\" "
            "range=\"$http_range\" conn=$connection "
            "sent=$body_bytes_sent';\n"
         << "    client_body_temp_path " << r << "/tmp/body;\n    proxy_temp_path " << r << "/tmp/proxy;\n"
         << "    fastcgi_temp_path " << r << "/tmp/fcgi;\n    uwsgi_temp_path " << r << "/tmp/uwsgi;\n"
         << "    scgi_temp_path " << r << "/tmp/scgi;\n"
         << "    default_type application/octet-stream;\n    sendfile on;\n    keepalive_requests 100000;\n"
         << "    http2_max_requests 100000;\n"
         << "    ssl_certificate " << r << "/tls/server.pem;\n    ssl_certificate_key " << r
         << "/tls/server.key;\n"
         << "    map $http_authorization $hub_auth_ok { \"Bearer " << token() << "\" 1; default 0; }\n"
         << "    server {\n        listen 127.0.0.1:" << m_hubPort << " ssl http2;\n"
         << "        access_log " << r << "/logs/hub.log atlas;\n"
         << hubLocations
         << "    location /api/models/ { add_header X-Error-Code RepoNotFound always; return 404; }\n"
         << "    location / { add_header X-Error-Code RepoNotFound always; return 404; }\n    }\n"
         << "    server {\n        listen 127.0.0.1:" << m_storagePort << " ssl http2;\n"
         << "        access_log " << r << "/logs/storage.log atlas;\n        root " << r << "/storage;\n"
         << "        location / { if ($http_authorization) { return 400; } }\n    }\n"
         << "    server {\n        listen 127.0.0.1:" << m_noRangePort << " ssl http2;\n"
         << "        access_log " << r << "/logs/norange.log atlas;\n        root " << r << "/storage;\n"
         << "        max_ranges 0;\n    }\n"
         << "    server {\n        listen 127.0.0.1:" << m_failingPort << " ssl http2;\n"
         << "        access_log " << r << "/logs/failing.log atlas;\n"
         << "        location / { add_header Retry-After 1 always; return 503; }\n    }\n"
         << "    server {\n        listen 127.0.0.1:" << m_plainPort << ";\n"
         << "        access_log " << r << "/logs/plain.log atlas;\n        root " << r << "/storage;\n    }\n"
         << "    server {\n        listen 127.0.0.1:" << m_downgradePort << " ssl http2;\n"
         << "        access_log " << r << "/logs/downgrade.log atlas;\n"
         << "        location / { return 302 http://127.0.0.1:" << m_plainPort << "$request_uri; }\n    }\n"
         << "}\n";
    conf.close();

    QString nginx = QStringLiteral("/usr/sbin/nginx");
    if (!QFile::exists(nginx)) nginx = QStringLiteral("nginx");
    m_nginx.setProcessChannelMode(QProcess::MergedChannels);
    m_nginx.start(nginx, {L("-p"), base, L("-c"), base + L("/nginx.conf"), L("-g"), L("daemon off;")});
    if (!m_nginx.waitForStarted(10000)) {
        if (error) *error = QStringLiteral("nginx did not start: ") + m_nginx.errorString();
        return false;
    }
    // Ready when the storage port accepts connections.
    for (int i = 0; i < 100; ++i) {
        const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
        sockaddr_in a{};
        a.sin_family = AF_INET;
        a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        a.sin_port = htons(static_cast<std::uint16_t>(m_failingPort));
        const bool up = ::connect(fd, reinterpret_cast<sockaddr *>(&a), sizeof a) == 0;
        ::close(fd);
        if (up) return true;
        if (m_nginx.state() == QProcess::NotRunning) break;
        QThread::msleep(50);
    }
    if (error)
        *error = QStringLiteral("nginx did not come up: ") + QString::fromLocal8Bit(m_nginx.readAll()) +
                 QString::fromStdString(slurp(r + "/logs/error.log"));
    return false;
}

void TestHub::stop()
{
    if (m_nginx.state() != QProcess::NotRunning) {
        m_nginx.terminate();
        if (!m_nginx.waitForFinished(5000)) {
            m_nginx.kill();
            m_nginx.waitForFinished(2000);
        }
    }
}
