# SPDX-License-Identifier: Apache-2.0
# tests/package/checks.sh: the steps of the package suite, sourced by run.sh once the root has
# booted (its helpers: check, result, fatal, in_root, apt_in_root, sdk, health, key, ...). Each
# step is what an operator does; each check is what they rely on afterwards. A check is a
# function: it stops at its first failing line, saying why. The previous build is installed
# and upgraded with a sandbox running first; everything after that is checked on this build.

journal() { in_root journalctl -q -u "$1" --no-pager -o cat; }
# whether the text has a line matching the pattern (no pipe: grep -q would end it early, and
# the writer's SIGPIPE fails a pipeline under pipefail)
has() { grep -qE -- "$2" <<<"$1"; }
has_text() { grep -qF -- "$2" <<<"$1"; } # the same, a fixed string (versions hold '+' and '.')
main_pid() { unit_prop sbxd MainPID; }
fail_with() { # message: print it, fail
        echo "$*"
        return 1
}
conf=$work/root/etc/sbx/sbxd.conf

# ---- install the previous build: its dependencies from Debian's archive ----
in_root apt-get -q update >"$work/apt-update.log" 2>&1 ||
        say "apt-get update failed: the package lists of the cached root are used"
apt_in_root install /debs/prev.deb >"$work/install.log" 2>&1 ||
        fatal "apt-get install ./sbx.deb: dependencies resolved from the archive" \
                "$(cat "$work/install.log")"
result ok "apt-get install ./sbx.deb: $prev_version and its dependencies from the archive"

enabled_and_running() {
        [ "$(in_root systemctl is-enabled sbxd sbx-templates | sort -u)" = enabled ] ||
                fail_with "not enabled: $(in_root systemctl is-enabled sbxd sbx-templates)"
        in_root systemctl is-active -q sbxd || fail_with "$(in_root systemctl status sbxd)"
}
check "sbxd.service and sbx-templates.service enabled, sbxd started" enabled_and_running

# ---- running: sbxd at once, the templates in the background ----
check "sbxd answers GET /health at once (Type=notify: ready once listening)" wait_for 30 health
templates_built() {
        wait_for 900 sh -c "! nsenter -t $pid1 -a -- systemctl is-active -q sbx-templates" ||
                fail_with "sbx-templates still running after 15 min"
        [ "$(unit_prop sbx-templates Result)" = success ] || fail_with "$(journal sbx-templates)"
        has "$(journal sbx-templates)" '^templates: building into' || fail_with "no progress"
}
check "sbx-templates.service built the templates, its progress in the journal" templates_built
say "sbx-templates: $(journal sbx-templates | grep -E '^templates: (built|no Debian)' | tail -n 2 | tr '\n' ' ')"
# the Debian layers the builder used, kept for the next run (hard links; the others go)
for l in $rootfs $packages; do
        [ -d "$work/state/.cache/debian/$l" ] && [ ! -d "$cache/layers/$l" ] &&
                cp -al "$work/state/.cache/debian/$l" "$cache/layers/$l" 2>/dev/null
done
for l in "$cache"/layers/*; do
        case ${l##*/} in "$rootfs" | "$packages") ;; *) rm -rf "$l" ;; esac
done

# ---- a sandbox, then the upgrade with it running ----
id=$(sdk create 2>"$work/sdk.log")
sandbox_created() { [ -n "$id" ] || fail_with "$(cat "$work/sdk.log")"; }
check "the e2b SDK: a sandbox created; commands as user and root, a W+X mapping, a process left running" \
        sandbox_created
[ -n "$id" ] || fatal "no sandbox: the steps that need one cannot run"
printf '# an operator change\nmax-sandboxes = 77\n' >>"$conf"
main=$(main_pid)
apt_in_root install /debs/new.deb >"$work/upgrade.log" 2>&1
upgrade_rc=$?
versions() {
        [ "$(in_root sbxd --version)" = "sbxd $1" ] || fail_with "$(in_root sbxd --version)"
        [ "$(in_root sbx --version)" = "sbx $1" ] || fail_with "$(in_root sbx --version)"
}
upgraded() {
        [ "$upgrade_rc" = 0 ] && has_text "$(cat "$work/upgrade.log")" "Setting up sbx ($version)" ||
                fail_with "$(cat "$work/upgrade.log")"
        [ "$(main_pid)" != "$main" ] || fail_with "sbxd was not restarted"
        versions "$version"
        has_text "$(health)" "\"version\":\"$version\"" || fail_with "$(health)"
}
check "apt-get install of $version over $prev_version: sbxd restarted, the new version" upgraded
check "the upgrade kept the sandbox: same files, same process, and it runs commands" \
        sdk check "$id"
kept_config() {
        has "$(cat "$conf")" '^max-sandboxes = 77$' || fail_with "replaced"
        [ "$(in_root sbxd --config /etc/sbx/sbxd.conf --get max-sandboxes)" = 77 ]
}
check "the upgrade kept the operator's change to the config file" kept_config
builder_again() { [ "$(journal sbx-templates | grep -c '^templates: building into')" -ge 2 ]; }
check "the upgrade ran the template builder again" wait_for 120 builder_again
wait_for 300 sh -c "! nsenter -t $pid1 -a -- systemctl is-active -q sbx-templates"

# ---- what this build's package holds ----
file_list() {
        local files missing=
        files=$(in_root dpkg -L sbx)
        for f in /usr/sbin/sbxd /usr/bin/sbx /usr/libexec/sbx/sbx-jailer \
                /usr/libexec/sbx/sbx-agent /usr/libexec/sbx/sbx-egress \
                /usr/libexec/sbx/runtime/bin/sudo \
                /usr/share/sbx/console/index.html /usr/share/sbx/console/vendor/xterm.js \
                /usr/lib/sbx/templates/build-all.sh \
                /usr/lib/sbx/templates/build-service.sh /usr/lib/sbx/templates/base/sbx-sudo \
                /usr/share/sbx/kernels/java/sbx-kernel.jar /usr/share/sbx/kernels/python/kernel.py \
                /etc/sbx/sbxd.conf /lib/systemd/system/sbxd.service \
                /lib/systemd/system/sbx-templates.service /usr/share/man/man8/sbxd.8.gz \
                /usr/share/man/man1/sbx.1.gz /usr/share/doc/sbx/README.md.gz \
                /usr/share/doc/sbx/architecture.md.gz /usr/share/doc/sbx/systemd.md.gz \
                /usr/share/doc/sbx/copyright; do
                has "$files" "^$f\$" && [ -e "$work/root$f" ] || missing="$missing $f"
        done
        [ -z "$missing" ] || fail_with "missing:$missing"
}
check "the file list: the binaries, the agent's runtime, the console, the template builder, units, config, man pages, docs" \
        file_list
packaged_config() {
        has "$(in_root dpkg-query -W -f='${Conffiles}\n' sbx)" ' /etc/sbx/sbxd.conf ' ||
                fail_with "not a conffile"
        dpkg-deb --fsys-tarfile "$work/debs/new.deb" | tar -xOf - ./etc/sbx/sbxd.conf >"$work/conf"
        in_root sbxd --print-config | diff - "$work/conf"
        in_root sbxd --config /etc/sbx/sbxd.conf --check-config
}
check "/etc/sbx/sbxd.conf: a conffile, every option at its default (sbxd --print-config)" \
        packaged_config
check "systemd-analyze verify: both units (commands, man pages, dependencies)" \
        in_root systemd-analyze verify sbxd.service sbx-templates.service
deploy_paths() {
        local f bad=
        for f in $(grep -ohE '/(usr|etc)/[A-Za-z0-9_./-]*sbx[A-Za-z0-9_./-]*' \
                "$top"/deploy/kubernetes/*.yaml "$top"/deploy/nomad/*.nomad \
                "$top"/deploy/Containerfile | sort -u); do
                [ -e "$work/root$f" ] || bad="$bad $f"
        done
        [ -z "$bad" ] || fail_with "not installed:$bad"
}
check "the deploy files (Kubernetes, Nomad, Containerfile) name files the package installs" \
        deploy_paths
health_says() { # version templates
        local h
        h=$(health) || fail_with "no answer"
        [ "$h" = "{\"status\":\"ok\",\"version\":\"$1\",\"templates\":\"$2\"}" ] || fail_with "$h"
}
check "GET /health: this version, templates ready" health_says "$version" ready
console_served() {
        local page
        page=$(curl -fsS --max-time 5 "http://127.0.0.1:$port/ui/") || fail_with "no /ui/"
        has_text "$page" '<title>sbx console</title>' || fail_with "not the console: ${page:0:200}"
        curl -fsS --max-time 5 -o /dev/null "http://127.0.0.1:$port/ui/vendor/xterm.js" ||
                fail_with "no /ui/vendor/xterm.js"
}
check "the web console at /ui/, from the package's files" console_served
no_key_in_journal() {
        ! has "$(journal sbxd)" "$(key)" || fail_with "the API key is in the journal"
        has "$(journal sbxd)" '^# E2B_API_KEY: a key of /var/lib/sbx/keys' ||
                fail_with "no line saying where the key is"
}
check "sbxd's journal says where the API key is, not the key" no_key_in_journal
journal_fields() {
        has "$(in_root journalctl -q SANDBOX_ID="$id" -o verbose)" '^ *REQUEST_ID=' ||
                fail_with "no REQUEST_ID on the sandbox's lines"
        has "$(in_root journalctl -q SANDBOX_ID="$id" -o cat)" "sandbox $id: adopted" ||
                fail_with "$(in_root journalctl -q SANDBOX_ID="$id" -o cat)"
}
check "journalctl SANDBOX_ID=$id: the sandbox's lines, with the requests' REQUEST_ID" journal_fields

# ---- keys: sbx key create|ls|revoke, in force without a restart ----
main=$(main_pid)
new=$(in_root sbx key create --name pkgtest)
status_is() { [ "$(status_with "$1" /v2/sandboxes)" = "$2" ]; }
check "sbx key create: the new key works at once, without a restart" wait_for 5 status_is "$new" 200
key_listed() {
        has "$(in_root sbx key ls)" "^${new:0:8}\\.\\.\\.${new: -4} +pkgtest +20" ||
                fail_with "$(in_root sbx key ls)"
}
check "sbx key ls: the key shortened, its name, its creation time" key_listed
in_root sbx key revoke pkgtest >/dev/null
check "sbx key revoke: the key is refused at once (401)" wait_for 5 status_is "$new" 401
last_key() { ! in_root sbx key revoke "$(key)" 2>/dev/null && status_is "$(key)" 200; }
check "sbx key revoke of the last key is refused" last_key
check "sbxd kept running through the key changes" test "$(main_pid)" = "$main"

# ---- reload: systemctl reload applies what it may, and refuses a bad file ----
reload_applies() {
        printf 'max-creates = 5\nlog-format = text\n' >>"$conf"
        in_root systemctl reload sbxd || fail_with "systemctl reload failed"
        sed -i '$d' "$conf" # log-format back
        has "$(journal sbxd)" 'reload: max-creates changed from 32 to 5' ||
                fail_with "not applied: $(journal sbxd | tail -n 5)"
        has "$(journal sbxd)" 'reload: log-format changed from auto to text, which takes a restart' ||
                fail_with "no word of the restart it takes"
}
check "systemctl reload sbxd: max-creates applied, log-format waits for a restart" reload_applies
# conf_mistake LINE COMMAND...: with LINE appended to sbxd.conf, COMMAND must fail; the line
# is taken out again either way. Prints LINE's number in the file; fails if COMMAND succeeded.
conf_mistake() {
        echo "$1" >>"$conf"
        local line failed=0
        line=$(wc -l <"$conf")
        shift
        "$@" >/dev/null 2>&1 || failed=1
        sed -i '$d' "$conf"
        echo "$line"
        [ "$failed" = 1 ]
}
reload_refuses() {
        local line
        line=$(conf_mistake 'create-wait = soon' in_root systemctl reload sbxd) ||
                fail_with "systemctl reload succeeded"
        has "$(journal sbxd)" "sbxd.conf:$line: create-wait: 'soon'" ||
                fail_with "the mistake is not named: $(journal sbxd | tail -n 5)"
        [ "$(main_pid)" = "$main" ] && health >/dev/null || fail_with "sbxd did not keep running"
}
check "systemctl reload of a file with a mistake fails and names its line; sbxd keeps running" \
        reload_refuses
bad_start() {
        local line
        line=$(conf_mistake 'bogus = 1' in_root systemctl restart sbxd) ||
                fail_with "sbxd started with a bad file"
        sleep 3 # RestartSec=2s: a retry would have come by now
        [ "$(unit_prop sbxd NRestarts)" = 0 ] || fail_with "restarted $(unit_prop sbxd NRestarts) times"
        has "$(journal sbxd)" "sbxd.conf:$line: unknown option 'bogus'" ||
                fail_with "the mistake is not named: $(journal sbxd | tail -n 5)"
        in_root systemctl start sbxd
        wait_for 30 health
        sdk check "$id"
}
check "a mistake in the file at start: sbxd does not start, names the line, is not restarted in a loop; the sandbox waits for the fixed sbxd" \
        bad_start

# ---- restart: the sandbox lives on ----
main=$(main_pid)
in_root systemctl restart sbxd
restarted() {
        [ "$(main_pid)" != "$main" ] || fail_with "the same sbxd"
        [ "$(journal sbxd | grep -c "sandbox $id: adopted")" -ge 3 ] || fail_with "not adopted"
        sdk check "$id"
}
check "systemctl restart sbxd: the sandbox kept running, adopted by the new sbxd" restarted

# ---- remove, then purge ----
listed=$(in_root dpkg -L sbx)
agent=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["pid"])' \
        "$work/state/sandboxes/$id/sandbox.json" 2>/dev/null)
t=$SECONDS
apt_in_root remove sbx >"$work/remove.log" 2>&1
removed() {
        [ -n "$agent" ] || fail_with "no agent pid in the sandbox's record"
        ! kill -0 "$agent" 2>/dev/null || fail_with "the sandbox's agent still runs"
        [ -z "$(ls -A "$work/state/sandboxes")" ] || fail_with "$(ls "$work/state/sandboxes")"
        ! in_root systemctl is-active -q sbxd || fail_with "sbxd still runs"
        [ -f "$conf" ] && [ -f "$work/state/keys" ] ||
                fail_with "the config file or the state dir is gone"
}
check "apt-get remove: this host's sandboxes killed, the units stopped, config and state kept" \
        removed
[ $((SECONDS - t)) -lt 60 ] ||
        say "apt-get remove took $((SECONDS - t)) s: $(grep -E '^(Removing|Processing)' "$work/remove.log" | tr '\n' ' ')"
apt_in_root purge sbx >"$work/purge.log" 2>&1
purged() {
        local f left=
        while read -r f; do
                [ -d "$work/root$f" ] || [ ! -e "$work/root$f" ] || left="$left $f"
        done <<<"$listed"
        [ -z "$left" ] || fail_with "left:$left"
        [ ! -e "$work/root/etc/sbx" ] || fail_with "/etc/sbx: $(ls -A "$work/root/etc/sbx")"
        [ ! -e "$work/root/var/cache/sbx" ] || fail_with "/var/cache/sbx is left"
        [ -z "$(find "$work/root/etc/systemd/system" -name 'sbx*.service' -type l)" ] ||
                fail_with "unit links are left"
        [ -f "$work/state/keys" ] && has "$(cat "$work/purge.log")" 'SBX_PURGE_STATE=yes' ||
                fail_with "the state dir was not kept, or the purge did not say so"
}
check "apt-get purge: files, config, template cache, unit links gone; /var/lib/sbx kept" purged
t0=$SECONDS
apt_in_root install /debs/new.deb >/dev/null 2>&1
t1=$SECONDS
apt_in_root remove sbx >/dev/null 2>&1
t2=$SECONDS
in_root env SBX_PURGE_STATE=yes apt-get -q -y purge sbx >"$work/purge2.log" 2>&1
say "install again $((t1 - t0)) s, remove $((t2 - t1)) s, purge with the state $((SECONDS - t2)) s ($(du -sh "$work/state" 2>/dev/null | cut -f1) left)"
state_purged() {
        [ -z "$(ls -A "$work/state")" ] || fail_with "$(ls -A "$work/state"; cat "$work/purge2.log")"
}
check "SBX_PURGE_STATE=yes apt-get purge: the state dir's contents go too" state_purged
