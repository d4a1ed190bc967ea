#!/usr/bin/env bash
# `xftctl playbook run FILE` with a user's playbook on 2 test hosts: the
# exact folded lines per task (hosts with the same result on one line) and
# the recap, idempotency through creates /
# changed_when, a failing host leaving the play (exit 2), --json, a broken
# playbook refused with file:line:col before any host is touched, -e values
# from the hostile corpus carried literally into a shell string, an argv list
# and a path, and another user's authorized_keys written as that user with a
# planted symlink refused.
source "$XFT_SOURCE_DIR/tests/integration/lib.sh"

# irc (Debian's base passwd) is the other user; its home is private per host.
other_user_home=$(getent passwd irc | cut -d: -f6)
[[ $other_user_home == /run/ircd ]] || fail "this test needs Debian's irc user with home /run/ircd (got '$other_user_home')"
[[ -e /run/ircd ]] || remove_on_exit /run/ircd
start_cluster 2 --private /run/ircd
book="$TEST_TMP/site.yaml"
cat >"$book" <<'YAML'
name: site
tasks:
  - name: a directory
    file: {path: /root/site, state: directory, mode: "0750"}
  - name: a config file
    copy: {dest: /root/site/app.conf, content: "host={{inventory_hostname}} addr={{address}}\n", mode: "0640"}
  - name: initialise once
    command: {cmd: "date > /root/site/initialised", creates: /root/site/initialised}
  - name: read it back
    command: cat /root/site/app.conf
    register: conf
    changed_when: "false"
  - name: fails on h02 only
    shell: "test {{inventory_hostname}} = h01"
    when: "'h0' in conf.stdout"
  - name: after the failure
    command: "true"
    changed_when: "false"
YAML

xft playbook run "$book" --accept-new-host-keys
assert_eq 2 "$RC" "exit code with a failing host; err: $ERR"
expected="PLAY [site] on 2 hosts
CONNECT
  ok: h[01-02]
TASK [a directory]
  changed: h[01-02]: /root/site: created
TASK [a config file]
  changed: h[01-02]: /root/site/app.conf: created
TASK [initialise once]
  changed: h[01-02]
TASK [read it back]
  ok: h[01-02]
TASK [fails on h02 only]
  changed: h01
  failed: h02: exit 1
TASK [after the failure]
  ok: h01
RECAP
  h01  ok=2 changed=4 failed=0 unreachable=0 skipped=0
  h02  ok=1 changed=3 failed=1 unreachable=0 skipped=0"
assert_eq "$expected" "$OUT" "first run output"
assert_eq "host=h02 addr=$HOST_H02_ADDR" "$(host_run h02 cat /root/site/app.conf)" "rendered file on h02"
assert_eq "640" "$(host_run h02 stat -c %a /root/site/app.conf)" "mode of the file"

step "second run, h01 only: only the unguarded command changes"
xft playbook run "$book" --hosts h01 --json
assert_eq 0 "$RC" "second run exit code"
assert_eq '{"changed":1,"failed":0,"ok":5,"skipped":0,"unreachable":0}' "$(jq -c '.recap.h01' <<<"$OUT")" "json recap"
assert_eq "ok" "$(jq -r '.tasks[] | select(.name == "initialise once") | .results[0].status' <<<"$OUT")" "creates guard"

step "a broken playbook is refused before any host is touched"
printf 'name: broken\ntasks:\n  - name: x\n    copy: {dest: /a, contnet: hi}\n' >"$TEST_TMP/broken.yaml"
xft playbook run "$TEST_TMP/broken.yaml"
assert_eq 1 "$RC" "exit code of a broken playbook"
assert_eq "xftctl: $TEST_TMP/broken.yaml:4:11: tasks[0].copy: give exactly one of content and src
xftctl: $TEST_TMP/broken.yaml:4:22: tasks[0].copy.contnet: unknown field (did you mean content?)" "$ERR" "error lines"
step "-e values are carried literally: a shell string, an argv list, a path; nothing runs"
cat >"$TEST_TMP/literal.yaml" <<'YAML'
name: literal
hosts: h01
tasks:
  - name: a shell string
    shell: "mkdir -p /root/lit && printf '%s' {{v}} > /root/lit/shell.txt"
  - name: an argv list
    command: [mkdir, -p, --, "/root/lit/{{v}}"]
  - name: a file under the value
    copy: {dest: "/root/lit/{{v}}/f", content: "{{v}}"}
YAML
literals=0
while IFS=$'\t' read -r field expect value; do
  [[ $field == extra_var && $expect == literal ]] || continue
  value=${value#*=}
  literals=$((literals + 1))
  host_run h01 rm -rf /root/lit
  xft playbook run "$TEST_TMP/literal.yaml" -e "v=$value"
  assert_eq 0 "$RC" "playbook with v=$value; out: $OUT; err: $ERR"
  assert_eq "$value" "$(host_run h01 cat /root/lit/shell.txt)" "the shell string's output"
  host_run h01 test -d "/root/lit/$value" || fail "no directory named exactly /root/lit/$value"
  assert_eq "$value" "$(host_run h01 cat "/root/lit/$value/f")" "the file under the value"
  for h in h01 h02; do
    assert_eq "" "$(host_run "$h" sh -c 'ls -d /tmp/PWNED* 2>/dev/null || true')" "markers on $h with v=$value"
  done
done < <(grep -v '^#' "$XFT_SOURCE_DIR/tests/data/hostile/values.tsv")
[[ $literals -ge 2 ]] || fail "values.tsv: expected extra_var literal rows, found $literals"

step "another user's authorized_keys: written as that user; a planted symlink is refused"
for h in h01 h02; do host_run "$h" chown irc: /run/ircd; done
host_run h02 runuser -u irc -- sh -c 'mkdir -m 700 /run/ircd/.ssh && ln -s /etc/shadow /run/ircd/.ssh/authorized_keys'
shadow_before=$(host_run h02 sh -c 'sha256sum /etc/shadow && stat -c "%U %a" /etc/shadow')
key="ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIOtherUsersKeyForTheTest irc@test"
cat >"$TEST_TMP/keys.yaml" <<YAML
name: keys
tasks:
  - name: irc's key
    authorized_key: {user: irc, key: "$key"}
YAML
xft playbook run "$TEST_TMP/keys.yaml"
assert_eq 2 "$RC" "exit code with h02's planted link; out: $OUT; err: $ERR"
assert_contains "$OUT" "  changed: h01: /run/ircd/.ssh/authorized_keys: /run/ircd/.ssh 0700, created" "h01 written"
assert_contains "$OUT" "  failed: h02: /run/ircd/.ssh/authorized_keys is a symbolic link; xftctl never follows links in irc's files (replace it with a real file or directory)" "h02 refused, naming the link"
assert_eq "irc 700" "$(host_run h01 stat -c '%U %a' /run/ircd/.ssh)" "h01: owner and mode of ~irc/.ssh"
assert_eq "irc 600" "$(host_run h01 stat -c '%U %a' /run/ircd/.ssh/authorized_keys)" "h01: owner and mode of authorized_keys"
assert_eq "$key" "$(host_run h01 cat /run/ircd/.ssh/authorized_keys)" "h01: irc's authorized_keys"
assert_eq "$shadow_before" "$(host_run h02 sh -c 'sha256sum /etc/shadow && stat -c "%U %a" /etc/shadow')" "h02: /etc/shadow untouched"
host_run h02 test -L /run/ircd/.ssh/authorized_keys || fail "h02: the link was replaced or removed"
xft playbook run "$TEST_TMP/keys.yaml" --hosts h01
assert_eq 0 "$RC" "second run on h01; out: $OUT"
assert_contains "$OUT" "  h01  ok=1 changed=0" "second run changes nothing"
echo "playbook_run: ok"
