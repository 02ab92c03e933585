// Command gorm is a smoke program for GORM (gorm.io/gorm with
// gorm.io/driver/mysql) against Strata: AutoMigrate (which reads
// information_schema), CRUD, a transaction
// that commits and one that rolls back, and prepared statements
// (PrepareStmt). It prints "OK gorm" or exits 1 with the failure.
//
// Usage: STRATA_DSN='root@tcp(127.0.0.1:4000)/?parseTime=true' go run .
package main

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"gorm.io/driver/mysql"
	"gorm.io/gorm"
	"gorm.io/gorm/logger"
)

// Product is the model AutoMigrate creates.
type Product struct {
	ID        uint   `gorm:"primaryKey"`
	Code      string `gorm:"size:32;uniqueIndex"`
	Price     int
	Note      *string `gorm:"size:100"`
	CreatedAt time.Time
	UpdatedAt time.Time
}

// ProductV2 is Product with an index on Price, a new column with a
// default (GORM sends ALTER TABLE products ADD stock bigint NOT NULL
// DEFAULT 7), and a longer Note (ALTER TABLE ... MODIFY COLUMN).
type ProductV2 struct {
	ID        uint    `gorm:"primaryKey"`
	Code      string  `gorm:"size:32;uniqueIndex"`
	Price     int     `gorm:"index"`
	Note      *string `gorm:"size:200"`
	Stock     int64   `gorm:"not null;default:7"`
	CreatedAt time.Time
	UpdatedAt time.Time
}

// TableName keeps ProductV2 on Product's table.
func (ProductV2) TableName() string { return "products" }

func main() {
	if err := run(os.Getenv("STRATA_DSN")); err != nil {
		fmt.Fprintln(os.Stderr, "gorm:", err)
		os.Exit(1)
	}
	fmt.Println("OK gorm")
}

func check(err error, what string) error {
	if err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	return nil
}

func run(dsn string) error {
	if dsn == "" {
		return errors.New("set STRATA_DSN")
	}
	admin, err := gorm.Open(mysql.Open(dsn), &gorm.Config{Logger: logger.Default.LogMode(logger.Silent)})
	if err != nil {
		return check(err, "open")
	}
	if err := admin.Exec("DROP DATABASE IF EXISTS gormtest").Error; err != nil {
		return check(err, "drop database")
	}
	if err := admin.Exec("CREATE DATABASE gormtest").Error; err != nil {
		return check(err, "create database")
	}
	cfg := mysql.Config{DSN: dsn}
	db, err := gorm.Open(mysql.New(cfg), &gorm.Config{PrepareStmt: true, Logger: logger.Default.LogMode(logger.Silent)})
	if err != nil {
		return check(err, "open with prepared statements")
	}
	if err := db.Exec("USE gormtest").Error; err != nil {
		return check(err, "use")
	}
	sqlDB, err := db.DB()
	if err != nil {
		return err
	}
	sqlDB.SetMaxOpenConns(1) // USE holds for the one connection

	// AutoMigrate reads information_schema (tables, columns, statistics)
	// to find what exists, then creates the table.
	if err := db.AutoMigrate(&Product{}); err != nil {
		return check(err, "AutoMigrate")
	}
	note := "first"
	p := Product{Code: "D42", Price: 100, Note: &note}
	if err := db.Create(&p).Error; err != nil {
		return check(err, "create")
	}
	if p.ID == 0 {
		return errors.New("create: no id assigned")
	}
	batch := []Product{{Code: "A1", Price: 5}, {Code: "B2", Price: 7}}
	if err := db.Create(&batch).Error; err != nil {
		return check(err, "batch create")
	}
	var got Product
	if err := db.First(&got, p.ID).Error; err != nil {
		return check(err, "first")
	}
	if got.Code != "D42" || got.Price != 100 || got.Note == nil || *got.Note != "first" {
		return fmt.Errorf("first: got %+v", got)
	}
	if err := db.Model(&got).Update("Price", 200).Error; err != nil {
		return check(err, "update")
	}
	if err := db.Model(&got).Updates(Product{Price: 250, Code: "D43"}).Error; err != nil {
		return check(err, "updates")
	}
	var byCode Product
	if err := db.Where("code = ?", "D43").First(&byCode).Error; err != nil {
		return check(err, "where")
	}
	if byCode.Price != 250 {
		return fmt.Errorf("after updates: price %d", byCode.Price)
	}
	// Prepared statements: the same query many times with new arguments.
	for i := range 20 {
		var n int64
		if err := db.Model(&Product{}).Where("price > ?", i).Count(&n).Error; err != nil {
			return check(err, "prepared count")
		}
		want := int64(0)
		for _, pr := range []int{250, 5, 7} {
			if pr > i {
				want++
			}
		}
		if n != want {
			return fmt.Errorf("count price > %d: %d, want %d", i, n, want)
		}
	}
	// A transaction that commits and one that rolls back.
	err = db.Transaction(func(tx *gorm.DB) error {
		if err := tx.Create(&Product{Code: "T1", Price: 1}).Error; err != nil {
			return err
		}
		return tx.Model(&Product{}).Where("code = ?", "A1").Update("price", 6).Error
	})
	if err != nil {
		return check(err, "committed transaction")
	}
	errRollback := errors.New("roll back")
	err = db.Transaction(func(tx *gorm.DB) error {
		if err := tx.Create(&Product{Code: "T2", Price: 2}).Error; err != nil {
			return err
		}
		return errRollback
	})
	if !errors.Is(err, errRollback) {
		return fmt.Errorf("rolled back transaction: %v", err)
	}
	var codes []string
	if err := db.Model(&Product{}).Order("code").Pluck("code", &codes).Error; err != nil {
		return check(err, "pluck")
	}
	if fmt.Sprint(codes) != "[A1 B2 D43 T1]" {
		return fmt.Errorf("codes after transactions: %v", codes)
	}
	if err := db.Delete(&Product{}, byCode.ID).Error; err != nil {
		return check(err, "delete")
	}
	var left int64
	if err := db.Model(&Product{}).Count(&left).Error; err != nil {
		return check(err, "count")
	}
	if left != 3 {
		return fmt.Errorf("after delete: %d rows", left)
	}
	// A duplicate on the unique index is MySQL's 1062.
	if err := db.Create(&Product{Code: "A1"}).Error; err == nil {
		return errors.New("duplicate code accepted")
	}
	// AutoMigrate of the same model again changes nothing (information_schema
	// describes the columns as GORM declared them); of a model with a new
	// index, a new column and a longer one, alters the populated table
	// and keeps the rows.
	if err := db.AutoMigrate(&Product{}); err != nil {
		return check(err, "AutoMigrate of an existing table")
	}
	if err := db.AutoMigrate(&ProductV2{}); err != nil {
		return check(err, "AutoMigrate adding an index and a column")
	}
	if !db.Migrator().HasColumn(&ProductV2{}, "stock") {
		return errors.New("AutoMigrate: the new column is missing")
	}
	types, err := db.Migrator().ColumnTypes(&ProductV2{})
	if err != nil {
		return check(err, "column types")
	}
	for _, ct := range types {
		if n, ok := ct.Length(); ok && ct.Name() == "note" && n != 200 {
			return fmt.Errorf("AutoMigrate: note is %d long, want 200", n)
		}
	}
	if !db.Migrator().HasIndex(&ProductV2{}, "idx_products_price") {
		return errors.New("AutoMigrate: the new index is missing")
	}
	var cheap []ProductV2
	if err := db.Where("price < ?", 100).Order("code").Find(&cheap).Error; err != nil {
		return check(err, "read after AutoMigrate")
	}
	if len(cheap) != 3 {
		return fmt.Errorf("after AutoMigrate: %d rows with price < 100, want 3", len(cheap))
	}
	for _, p := range cheap {
		if p.Stock != 7 {
			return fmt.Errorf("after AutoMigrate: %s has stock %d, want the default 7", p.Code, p.Stock)
		}
	}
	long := strings.Repeat("n", 150)
	if err := db.Create(&ProductV2{Code: "L1", Note: &long, Stock: 3}).Error; err != nil {
		return check(err, "create with the new column")
	}
	var l ProductV2
	if err := db.Where("code = ?", "L1").First(&l).Error; err != nil || l.Stock != 3 || *l.Note != long {
		return fmt.Errorf("read with the new column: %+v, %v", l, err)
	}
	if err := db.AutoMigrate(&ProductV2{}); err != nil {
		return check(err, "AutoMigrate of the migrated table")
	}
	return check(admin.Exec("DROP DATABASE gormtest").Error, "drop")
}
