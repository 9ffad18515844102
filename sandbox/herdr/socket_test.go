package herdr

import (
	"strings"
	"testing"
)

func TestLocate(t *testing.T) {
	home := map[string]string{"HOME": "/home/u"}
	with := func(extra map[string]string) map[string]string {
		env := map[string]string{"HOME": "/home/u"}
		for k, v := range extra {
			env[k] = v
		}
		return env
	}
	tests := []struct {
		name    string
		session string
		env     map[string]string
		want    string
		wantErr string
	}{
		{name: "the default session lives under XDG_CONFIG_HOME",
			env: with(map[string]string{"XDG_CONFIG_HOME": "/cfg"}), want: "/cfg/herdr/herdr.sock"},
		{name: "without XDG_CONFIG_HOME it lives under HOME",
			env: home, want: "/home/u/.config/herdr/herdr.sock"},
		{name: "without HOME it lives in TMPDIR",
			env: map[string]string{"TMPDIR": "/scratch"}, want: "/scratch/herdr/herdr.sock"},
		{name: "without HOME or TMPDIR it lives in /tmp",
			env: map[string]string{}, want: "/tmp/herdr/herdr.sock"},
		{name: "HERDR_SESSION names a session directory",
			env: with(map[string]string{"HERDR_SESSION": "work"}), want: "/home/u/.config/herdr/sessions/work/herdr.sock"},
		{name: "HERDR_SESSION=default is the default session",
			env: with(map[string]string{"HERDR_SESSION": "default"}), want: "/home/u/.config/herdr/herdr.sock"},
		{name: "HERDR_SOCKET_PATH beats HERDR_SESSION",
			env: with(map[string]string{"HERDR_SOCKET_PATH": "/run/h.sock", "HERDR_SESSION": "work"}), want: "/run/h.sock"},
		{name: "an explicit session beats HERDR_SOCKET_PATH and HERDR_SESSION", session: "mine",
			env:  with(map[string]string{"HERDR_SOCKET_PATH": "/run/h.sock", "HERDR_SESSION": "work", "XDG_CONFIG_HOME": "/cfg"}),
			want: "/cfg/herdr/sessions/mine/herdr.sock"},
		{name: "an explicit default session beats HERDR_SOCKET_PATH", session: "default",
			env: with(map[string]string{"HERDR_SOCKET_PATH": "/run/h.sock"}), want: "/home/u/.config/herdr/herdr.sock"},
		{name: "a session name cannot leave the sessions directory", session: "../evil",
			env: home, wantErr: "may only contain"},
		{name: "a session name cannot be a dot", session: ".",
			env: home, wantErr: "cannot be"},
		{name: "a session name has at most 64 bytes", session: strings.Repeat("a", 65),
			env: home, wantErr: "longer than 64"},
		{name: "an invalid HERDR_SESSION is an error",
			env: with(map[string]string{"HERDR_SESSION": "a/b"}), wantErr: "HERDR_SESSION"},
		{name: "an empty HERDR_SESSION is an error",
			env: with(map[string]string{"HERDR_SESSION": ""}), wantErr: "empty"},
		{name: "an empty HERDR_SOCKET_PATH is an error",
			env: with(map[string]string{"HERDR_SOCKET_PATH": ""}), wantErr: "HERDR_SOCKET_PATH is set but empty"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := locate(tt.session, func(k string) (string, bool) {
				v, ok := tt.env[k]
				return v, ok
			})
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("locate = %q, %v; want an error containing %q", got, err, tt.wantErr)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Fatalf("locate = %q, %v; want %q", got, err, tt.want)
			}
		})
	}
}
