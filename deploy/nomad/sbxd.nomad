# sbx on Nomad: a system job runs one sbxd node on every client, from the Debian package
# installed there (make deb); etcd is an external dependency (var.etcd_endpoints). See
# deploy/nomad/README.md.
variable "etcd_endpoints" {
  type        = string
  description = "etcd client endpoints, host:port comma separated"
  default     = "10.0.0.11:2379,10.0.0.12:2379,10.0.0.13:2379"
}

variable "storage_pool" {
  type        = string
  description = "the storage pool's size: /var/lib/sbx/pool.img, preallocated at the first start (64G, 512M)"
  default     = "64G"
}

variable "api_key" {
  type        = string
  description = "the API key every node shares (e2b_ + 40 hex digits)"
}

job "sbxd" {
  type        = "system"
  datacenters = ["dc1"]

  update {
    max_parallel = 1
    stagger      = "30s"
  }

  group "sbxd" {
    network {
      port "http" {
        static = 3000
      }
    }

    service {
      name     = "sbx"
      port     = "http"
      provider = "nomad"

      check {
        type     = "http"
        path     = "/health"
        interval = "10s"
        timeout  = "2s"
      }
    }

    task "templates" {
      lifecycle {
        hook    = "prestart"
        sidecar = false
      }

      driver = "raw_exec"

      config {
        command = "/usr/lib/sbx/templates/build-all.sh"
        args    = ["/var/lib/sbx/templates"]
      }

      template {
        data        = "${var.api_key}\n"
        destination = "/var/lib/sbx/keys"
        perms       = "600"
      }
    }

    task "sbxd" {
      # The jailer needs root on the host: user, mount, pid and network namespaces, cgroups,
      # loop devices. raw_exec runs it as the Nomad client's user (root); sandboxes keep
      # running across a restart of the task and are adopted by the next sbxd.
      driver = "raw_exec"

      config {
        command = "/usr/sbin/sbxd"
        args = [
          "--config", "/etc/sbx/sbxd.conf",
          "--listen", "0.0.0.0:${NOMAD_PORT_http}",
          "--state-dir", "/var/lib/sbx",
          "--cluster", "etcd://${var.etcd_endpoints}",
          "--node-name", "${node.unique.name}",
          "--advertise", "${NOMAD_IP_http}:${NOMAD_PORT_http}",
          "--storage-pool", "${var.storage_pool}",
        ]
      }

      kill_signal  = "SIGTERM"
      kill_timeout = "30s"

      resources {
        cpu    = 500
        memory = 512
      }
    }
  }
}
